// A mode change held for a second person (decision 0061): who proposed which mode or value, why it is
// held, when it expires, Approve / Refuse for whoever may decide (greyed out with the gateway's reason
// otherwise, as permission options are), and how it ended once the gateway says.

import { dateTime } from "../format";
import { type Decider, type HeldModeChange, decisionChoice, outcomeText, proposedText } from "../mode-changes";
import { Safe, shown } from "./shown";

interface Props {
  change: HeldModeChange;
  me: Decider;
  onDecide(decision: "approve" | "refuse"): void;
}

export function ModeChangeCard({ change: c, me, onDecide }: Props) {
  const waiting = c.state === "waiting";
  const approve = decisionChoice(c, me, "approve");
  const refuse = decisionChoice(c, me, "refuse");
  const reasons = [...new Set([approve, refuse].flatMap((choice) => (choice.enabled ? [] : [choice.reason])))];
  const hintId = `mode-not-yours-${c.proposalId}`;
  return (
    <section
      class={`card mode-change ${c.state === "decided" ? "closed" : "open"}`}
      data-card={`mode:${c.proposalId}`}
      aria-label={`Mode change: ${c.value}`}
      tabIndex={-1}
    >
      <div class="card-head">
        <strong>{c.state === "decided" ? "Mode change" : "Mode change waiting for a second person"}</strong>
        <span class="badge kind">{c.setting === "mode" ? "mode" : "configuration"}</span>
      </div>
      <p>
        <Safe text={c.proposedBy} /> proposes <Safe text={proposedText(c)} />.
      </p>
      {c.state !== "decided" && (
        <p class="muted">
          Held by the team's four eyes (<code>settings.modes.fourEyes</code>): the agent may ask fewer permission questions in it, so it
          reaches the agent only once another approver approves. It expires at {dateTime(c.expiresAt)}.
        </p>
      )}
      {c.state === "decided" && (
        <p class="resolution">
          <Safe text={outcomeText(c)} />
        </p>
      )}
      {c.state === "sent" && <p class="muted">Decision sent…</p>}
      {c.refused && (
        <p class="error" role="alert">
          <Safe text={c.refused} />
        </p>
      )}
      {waiting && (
        <div class="options" role="group" aria-label="Decide the mode change">
          <button
            class="option allow"
            disabled={!approve.enabled}
            title={approve.enabled ? undefined : shown(approve.reason).text}
            aria-describedby={approve.enabled ? undefined : hintId}
            onClick={() => onDecide("approve")}
          >
            Approve
          </button>
          <button
            class="option reject"
            disabled={!refuse.enabled}
            title={refuse.enabled ? undefined : shown(refuse.reason).text}
            aria-describedby={refuse.enabled ? undefined : hintId}
            onClick={() => onDecide("refuse")}
          >
            Refuse
          </button>
        </div>
      )}
      {waiting && reasons.length > 0 && (
        <p class="hint not-yours" id={hintId}>
          <Safe text={reasons.join(" ")} />
        </p>
      )}
    </section>
  );
}
