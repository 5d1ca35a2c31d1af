// On a permission card asked because of unseen changes (decisions 0046, 0062): per change, what the
// agent changed — the diff of the tool call that made it in this session, a link to the other
// session's card — and, said plainly, what cannot be shown (a command's writes, a diff this page
// never got). The person judges the effect; the paths alone do not show it. A change the gateway sent
// no diff for also says what is known of its step (command, directory, rule, when) and has an unticked
// "I accept what this may have written": only a ticked one is named as accepted (decision 0068).

import type { JsonObject } from "../acp";
import type { Session } from "../api";
import { type Acceptance, type UnseenShown, type UnseenView, unseenViews } from "../unseen-diffs";
import { DiffView } from "./diff-view";
import { Safe } from "./shown";

export function UnseenChanges({
  unseen,
  session,
  tools,
  accepted,
  onAccept,
}: {
  unseen: UnseenShown;
  session: Session;
  tools: Readonly<Record<string, JsonObject>>;
  /** The changes the person ticked as accepted. */
  accepted: readonly number[];
  /** Ticks or unticks one; absent once the card is answered (nothing left to accept). */
  onAccept?: (id: number, ticked: boolean) => void;
}) {
  const { views, unlisted } = unseenViews(unseen, { sessionId: session.id, cwd: session.cwd }, tools);
  const notShown = views.filter((v) => v.type === "anything" || v.type === "missing").length;
  return (
    // A section, not a <details>: nothing here takes a Tab stop but the links and the acceptances, so the
    // keyboard path to the options stays as short as on any card (decision 0048).
    <section class="unseen-changes" aria-label="What the agent changed that nobody saw">
      <p class="unseen-head">
        What the agent changed that nobody saw ({unseen.total}
        {notShown > 0 ? `; ${notShown} cannot be shown` : ""})
      </p>
      <ul class="unseen-list">
        {views.map((v, i) => (
          <li key={i} class={`unseen ${v.type}`}>
            <View view={v} />
            {v.accept && <Accept accept={v.accept} ticked={accepted.includes(v.accept.id)} onAccept={onAccept} />}
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

/** What is known of a change no diff shows, and the person's explicit acceptance of it (decision 0068). */
function Accept({
  accept: a,
  ticked,
  onAccept,
}: {
  accept: Acceptance;
  ticked: boolean;
  onAccept: ((id: number, ticked: boolean) => void) | undefined;
}) {
  const hint = `accept-hint-${a.id}`;
  return (
    <div class="accept">
      <p class="hint">
        {a.cwd !== null && (
          <>
            Ran in{" "}
            <code class="path">
              <Safe text={a.cwd} />
            </code>
            .{" "}
          </>
        )}
        {a.ruleId !== null ? (
          <>
            Answered by rule{" "}
            <code>
              <Safe text={a.ruleId} />
            </code>
          </>
        ) : (
          "Run without asking anyone"
        )}
        {a.at !== null && <> at {new Date(a.at).toLocaleString()}</>}.
      </p>
      {a.running && (
        <p class="hint warn" id={hint}>
          Still running when this was listed: it may still be writing, so it cannot be accepted here. Once it finishes, the next request
          lists it again.
        </p>
      )}
      {onAccept && (
        <label class="inline accept-field">
          <input
            type="checkbox"
            checked={ticked && !a.running}
            disabled={a.running}
            aria-describedby={a.running ? hint : undefined}
            onChange={(e) => onAccept(a.id, e.currentTarget.checked)}
          />{" "}
          I accept what this may have written
        </label>
      )}
    </div>
  );
}
