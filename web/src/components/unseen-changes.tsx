// On a permission card asked because of unseen changes (decisions 0046, 0062): per change, what the
// agent changed — the diff of the tool call that made it in this session, a link to the other
// session's card — and, said plainly, what cannot be shown (a command's writes, a diff this page
// never got). The person judges the effect; the paths alone do not show it.

import type { JsonObject } from "../acp";
import type { Session } from "../api";
import { type UnseenShown, type UnseenView, unseenViews } from "../unseen-diffs";
import { DiffView } from "./diff-view";
import { Safe } from "./shown";

export function UnseenChanges({
  unseen,
  session,
  tools,
}: {
  unseen: UnseenShown;
  session: Session;
  tools: Readonly<Record<string, JsonObject>>;
}) {
  const { views, unlisted } = unseenViews(unseen, { sessionId: session.id, cwd: session.cwd }, tools);
  const notShown = views.filter((v) => v.type === "anything" || v.type === "missing").length;
  return (
    // A section, not a <details>: nothing here takes a Tab stop but the links, so the keyboard path to
    // the options stays as short as on any card (decision 0048).
    <section class="unseen-changes" aria-label="What the agent changed that nobody saw">
      <p class="unseen-head">
        What the agent changed that nobody saw ({unseen.total}
        {notShown > 0 ? `; ${notShown} cannot be shown` : ""})
      </p>
      <ul class="unseen-list">
        {views.map((v, i) => (
          <li key={i} class={`unseen ${v.type}`}>
            <View view={v} />
          </li>
        ))}
      </ul>
      {unlisted > 0 && <p class="hint">And {unlisted} more the gateway did not list.</p>}
    </section>
  );
}

function View({ view: v }: { view: UnseenView }) {
  switch (v.type) {
    case "diff":
      return (
        <>
          <DiffView path={v.diff.path} oldText={v.diff.oldText} newText={v.diff.newText} />
          {v.elsewhere && (
            <p class="hint">
              Made in <a href={v.elsewhere}>another session</a>.
            </p>
          )}
        </>
      );
    case "elsewhere":
      return (
        <p>
          <code class="path">
            <Safe text={v.path} />
          </code>{" "}
          changed in <a href={v.href}>another session</a>.
        </p>
      );
    case "anything":
      return (
        <p class="cannot-show">
          <strong>Cannot be shown:</strong>{" "}
          {v.command !== null ? (
            <>
              the command{" "}
              <code>
                <Safe text={v.command} />
              </code>
            </>
          ) : (
            "a step"
          )}{" "}
          may have written anything (<code>*</code>), and no diff says what.
          {!v.here && v.href && (
            <>
              {" "}
              It ran in <a href={v.href}>another session</a>.
            </>
          )}
        </p>
      );
    case "missing":
      return (
        <p class="cannot-show">
          <strong>Cannot be shown:</strong>{" "}
          <code class="path">
            <Safe text={v.path} />
          </code>{" "}
          — this session's transcript has no diff of it.
        </p>
      );
  }
}
