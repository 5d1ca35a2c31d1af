// "Waiting on you", at the top of the console's first page: every request the signed-in person may
// answer now, across the tenant's sessions, oldest first, each a link to its card (its session opens
// with the card focused). Refreshed every few seconds and when the tab comes back into view; the count goes into the
// tab's title. Nothing is listed that its session no longer holds (the gateway asks each session).

import { useCallback, useEffect, useState } from "preact/hooks";
import type { Api } from "../api";
import { ago, errorText } from "../format";
import { type WaitingModeChange, type WaitingRequest, modeChangeHash, requestHash, titleWith, waitingOnMe, whatItDoes } from "../waiting";
import { Safe } from "./shown";

const REFRESH_MS = 5_000;
const BASE_TITLE = document.title;

export function WaitingOnYou({ api }: { api: Api }) {
  const [items, setItems] = useState<WaitingRequest[] | null>(null);
  const [modeChanges, setModeChanges] = useState<WaitingModeChange[]>([]);
  const [error, setError] = useState<string | null>(null);

  const refresh = useCallback(async () => {
    try {
      const page = await waitingOnMe(api);
      setItems(page.items);
      setModeChanges(page.modeChanges ?? []);
      setError(page.incomplete ? "Some sessions could not be asked just now; the list may be missing requests." : null);
    } catch (e) {
      setError(`Could not load what is waiting on you: ${errorText(e)}`);
    }
  }, [api]);

  useEffect(() => {
    void refresh();
    const timer = setInterval(() => void refresh(), REFRESH_MS);
    const onVisible = () => document.visibilityState === "visible" && void refresh();
    document.addEventListener("visibilitychange", onVisible);
    addEventListener("hashchange", onVisible);
    return () => {
      clearInterval(timer);
      document.removeEventListener("visibilitychange", onVisible);
      removeEventListener("hashchange", onVisible);
    };
  }, [refresh]);

  const count = (items?.length ?? 0) + modeChanges.length;
  useEffect(() => {
    document.title = titleWith(count, BASE_TITLE);
    return () => {
      document.title = BASE_TITLE;
    };
  }, [count]);

  if (items === null && error === null) return null;
  return (
    <section class="waiting-on-you" aria-labelledby="waiting-title">
      <h2 id="waiting-title">
        Waiting on you <span class="count">{count}</span>
      </h2>
      {error && <p class="error">{error}</p>}
      {items !== null && count === 0 && <p class="muted">Nothing waits on you.</p>}
      {items !== null && items.length > 0 && (
        <ul>
          {items.map((w) => (
            <li key={`${w.sessionId}/${w.requestId}`}>
              <a href={requestHash(w)}>
                <code class="what">
                  <Safe text={whatItDoes(w)} />
                </code>
              </a>
              <span class="where">
                <Safe text={w.title ?? w.cwd} /> · {w.agent} · asked {ago(w.askedAt)}
              </span>
            </li>
          ))}
        </ul>
      )}
      {modeChanges.length > 0 && (
        <ul aria-label="Mode changes waiting for a second person">
          {modeChanges.map((m) => (
            <li key={`${m.sessionId}/${m.proposalId}`} class="mode-change">
              <a href={modeChangeHash(m)}>
                <code class="what">
                  <Safe text={m.operation} />
                </code>
              </a>
              <span class="where">
                mode change proposed by <Safe text={m.proposedBy} /> {ago(m.proposedAt)} · needs a second approver
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
