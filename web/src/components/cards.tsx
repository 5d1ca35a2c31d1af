// Tool-call and permission cards. What a call does is shown from its kind, command, working
// directory, resolved paths and diff; the agent's title is shown apart, quoted and attributed, as
// the agent's own words. A permission card lists every option with its kind; an "always" option
// first shows the rule that would be stored and what it covers, then asks to confirm.

import type { ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { type DeriveResult, type DerivedRule, deriveRule } from "../../../protocol/rules/derive";
import { exactHash } from "../../../protocol/rules/canonical";
import { type JsonObject, isObject } from "../acp";
import { optionChoice } from "../answerable";
import type { Api, DryRun, Session } from "../api";
import { errorText } from "../format";
import { renderMarkdown } from "../markdown";
import { commandOf, diffsOf, kindOf, locationsOf, pathsOfCall, workdirOf } from "../operation";
import { coversText, scopeText } from "../rule-text";
import { DiffView } from "./diff-view";
import { DisplayWarning, Safe, shown } from "./shown";
import { UnseenChanges } from "./unseen-changes";
import { type Me, type Permission, type PermissionOption, type PlanEntry, resolutionText } from "../transcript";
import { MAX_ANSWER_REASON_CHARS } from "../../../protocol/answer-reason";

export function Markdown({ text }: { text: string }) {
  // Controls and invisible characters become symbols before parsing; renderMarkdown escapes any
  // HTML in the text: this is the only HTML the console inserts.
  const s = shown(text, true);
  return (
    <>
      <DisplayWarning escaped={s.escaped} />
      <div class="md" dangerouslySetInnerHTML={{ __html: renderMarkdown(s.text) }} />
    </>
  );
}

export function PlanView({ entries }: { entries: PlanEntry[] }) {
  return (
    <section class="card plan" aria-label="The agent's plan">
      <h3>Plan</h3>
      <ol>
        {entries.map((e, i) => (
          <li key={i} class={`plan-${e.status}`}>
            <span class="badge">{e.status.replace("_", " ")}</span> <Safe text={e.content} />
          </li>
        ))}
      </ol>
    </section>
  );
}

const STATUS_LABEL: Record<string, string> = {
  pending: "pending",
  in_progress: "running",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled (the turn ended)",
};

/** A tool call; with a permission request for it, the request (showing the operation) inside. */
export function ToolCard({ call, children }: { call: JsonObject; children?: ComponentChildren }) {
  const status = typeof call.status === "string" ? call.status : "pending";
  return (
    <section class={`card tool status-${status}`} aria-label={`Tool call: ${kindOf(call)}`} data-tool-call={String(call.toolCallId)}>
      <div class="card-head">
        <span class="badge kind">{kindOf(call)}</span>
        <span class={`badge status status-${status}`}>{STATUS_LABEL[status] ?? status}</span>
      </div>
      {children ?? (
        <>
          <AgentWords call={call} />
          <Operation call={call} />
        </>
      )}
      <ToolOutput call={call} />
    </section>
  );
}

function AgentWords({ call }: { call: JsonObject }) {
  if (typeof call.title !== "string" || !call.title) return null;
  return (
    <p class="agent-words">
      <span class="muted">The agent says:</span>{" "}
      <span class="agent-title">
        “<Safe text={call.title} />”
      </span>
    </p>
  );
}

/** The operation in full: command with its arguments and working directory, paths, diffs. */
function Operation({ call, cwd }: { call: JsonObject; cwd?: string }) {
  const command = commandOf(call);
  const workdir = workdirOf(call) ?? (command ? cwd : undefined);
  const paths = pathsOfCall(call);
  const locations = locationsOf(call);
  const diffs = diffsOf(call);
  const shownCommand = command ? shown(command) : null;
  const rawInput = !command && call.rawInput !== undefined ? shown(JSON.stringify(call.rawInput, null, 2) ?? "", true) : null;
  return (
    <div class="operation">
      {command && shownCommand && (
        <div class="field">
          <span class="label">Command</span>
          <DisplayWarning escaped={shownCommand.escaped} />
          <pre class="code command">{shownCommand.text}</pre>
          {workdir && (
            <span class="muted">
              in{" "}
              <code class="path">
                <Safe text={workdir} />
              </code>
            </span>
          )}
        </div>
      )}
      {paths.length > 0 && (
        <div class="field">
          <span class="label">{paths.length > 1 ? "Paths" : "Path"}</span>
          <ul class="paths">
            {paths.map((p) => (
              <li key={p}>
                <code class="path">
                  <Safe text={p} />
                </code>
                {locations
                  .filter((l) => l.path === p && l.line !== undefined)
                  .map((l) => (
                    <span key={l.line} class="muted">
                      {" "}
                      line {l.line}
                    </span>
                  ))}
              </li>
            ))}
          </ul>
        </div>
      )}
      {!command && paths.length === 0 && typeof call.name === "string" && (
        <div class="field">
          <span class="label">Tool</span>{" "}
          <code>
            <Safe text={call.name} />
          </code>
        </div>
      )}
      {paths.length === 0 && rawInput && (
        <details class="field" open={rawInput.escaped > 0}>
          <summary>Input</summary>
          <DisplayWarning escaped={rawInput.escaped} />
          <pre class="code">{rawInput.text}</pre>
        </details>
      )}
      {diffs.map((d) => (
        <DiffView key={d.path} path={d.path} oldText={d.oldText} newText={d.newText} />
      ))}
    </div>
  );
}

function ToolOutput({ call }: { call: JsonObject }) {
  const content = Array.isArray(call.content) ? call.content.filter(isObject) : [];
  const texts = content.filter((c) => c.type === "content" && isObject(c.content));
  const terminals = content.filter((c) => c.type === "terminal");
  const output = isObject(call.rawOutput) ? call.rawOutput : null;
  if (texts.length === 0 && terminals.length === 0 && !output) return null;
  const shownTexts = texts.map((c) => {
    const block = c.content as JsonObject;
    return shown(block.type === "text" ? String(block.text) : `[${String(block.type)}]`, true);
  });
  const stdout = output && typeof output.stdout === "string" ? shown(output.stdout, true) : null;
  const stderr = output && typeof output.stderr === "string" ? shown(output.stderr, true) : null;
  const escaped = shownTexts.reduce((n, t) => n + t.escaped, 0) + (stdout?.escaped ?? 0) + (stderr?.escaped ?? 0);
  return (
    <div class="output">
      <DisplayWarning escaped={escaped} />
      {shownTexts.map((t, i) => (
        <pre key={i} class="code">
          {t.text}
        </pre>
      ))}
      {terminals.map((c, i) => (
        <p key={`t${i}`} class="muted">
          Terminal <code>{shown(String(c.terminalId)).text}</code> (its output stays with the client that ran it)
        </p>
      ))}
      {output && (stdout || stderr) && (
        <div class="terminal" aria-label="Terminal output">
          {typeof output.exitCode === "number" && <span class="muted">exit code {output.exitCode}</span>}
          {stdout?.text && <pre class="code term">{stdout.text}</pre>}
          {stderr?.text && <pre class="code term stderr">{stderr.text}</pre>}
        </div>
      )}
    </div>
  );
}

interface PermissionProps {
  api: Api;
  permission: Permission;
  session: Session;
  /** Who this page is signed in as: a resolution by them says "you". */
  me: Me;
  /** The session's tool calls: the diffs of the unseen changes made here (decision 0062). */
  tools: Readonly<Record<string, JsonObject>>;
  /** The option chosen, the person's reason (empty: none), and the unseen changes they accepted (decision 0068). */
  onAnswer(optionId: string, reason: string, accepted: number[]): void;
}

export function PermissionCard({ api, permission: p, session, me, tools, onAnswer }: PermissionProps) {
  const [confirming, setConfirming] = useState<PermissionOption | null>(null);
  const [reason, setReason] = useState("");
  // Unticked until the person ticks each: an allow names only these as accepted (decision 0068).
  const [accepted, setAccepted] = useState<number[]>([]);
  const accept = (id: number, ticked: boolean) =>
    setAccepted((now) => (ticked ? [...now.filter((a) => a !== id), id] : now.filter((a) => a !== id)));
  const open = p.state === "open";
  return (
    <section
      class={`card permission ${open ? "open" : "closed"}`}
      id={open ? "permission-waiting" : undefined}
      data-tool-call-id={typeof p.toolCall.toolCallId === "string" ? p.toolCall.toolCallId : undefined}
      aria-label={`Permission request: ${kindOf(p.toolCall)}`}
      tabIndex={-1}
    >
      <div class="card-head">
        <strong>{open ? "Permission requested" : "Permission request"}</strong>
        <span class="badge kind">{kindOf(p.toolCall)}</span>
      </div>
      <AgentWords call={p.toolCall} />
      <Operation call={p.toolCall} cwd={session.cwd} />
      {p.note && (
        <p class="hint warn">
          <Safe text={p.note} />
        </p>
      )}
      {p.unseen && (
        <UnseenChanges unseen={p.unseen} session={session} tools={tools} accepted={accepted} {...(open ? { onAccept: accept } : {})} />
      )}
      {p.state === "resolved" && (
        <p class="resolution">
          <Safe text={p.decided ? resolutionText(p.decided, me) : (p.resolution ?? "")} />
        </p>
      )}
      {p.state === "resolved" && p.decided?.reason && <p class="answer-reason">Reason: “{shown(p.decided.reason).text}”</p>}
      {open && p.options.some((o) => optionChoice(p.answerable, o.optionId).enabled) && (
        <label class="reason-field">
          Reason <span class="muted">(optional, shown with your answer)</span>
          <input type="text" maxLength={MAX_ANSWER_REASON_CHARS} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        </label>
      )}
      {p.state === "sent" && <p class="muted">Answer sent…</p>}
      {p.state === "withdrawn" && <p class="muted">Answered elsewhere…</p>}
      {open && !confirming && (
        <div class="options" role="group" aria-label="Options">
          {p.options.map((o) => {
            const choice = optionChoice(p.answerable, o.optionId);
            return (
              <button
                key={o.optionId}
                class={`option ${o.kind.startsWith("allow") ? "allow" : "reject"}`}
                disabled={!choice.enabled}
                title={choice.enabled ? undefined : shown(choice.reason).text}
                aria-describedby={choice.enabled ? undefined : `not-yours-${p.key}`}
                onClick={() => (o.kind.endsWith("_always") ? setConfirming(o) : onAnswer(o.optionId, reason, accepted))}
              >
                <Safe text={o.name} /> <span class="option-kind">{shown(o.kind).text}</span>
              </button>
            );
          })}
        </div>
      )}
      {open && !confirming && <NotYours permission={p} />}
      {open && confirming && (
        <AlwaysConfirm
          api={api}
          permission={p}
          option={confirming}
          session={session}
          onConfirm={() => onAnswer(confirming.optionId, reason, accepted)}
          onBack={() => setConfirming(null)}
        />
      )}
    </section>
  );
}

/** Why some options are greyed out: the gateway's reason, once under the options. */
function NotYours({ permission: p }: { permission: Permission }) {
  const reasons = new Set(p.options.map((o) => optionChoice(p.answerable, o.optionId)).flatMap((c) => (c.enabled ? [] : [c.reason])));
  if (reasons.size === 0) return null;
  return (
    <p class="hint not-yours" id={`not-yours-${p.key}`}>
      <Safe text={[...reasons].join(" ")} />
    </p>
  );
}

/**
 * The rule an "always" answer will store, derived with the gateway's own deriveRule (the code the
 * RulesObject runs when the answer arrives), and the API's dry run of this request against the
 * team's current rules.
 */
function AlwaysConfirm({
  api,
  permission: p,
  option,
  session,
  onConfirm,
  onBack,
}: {
  api: Api;
  permission: Permission;
  option: PermissionOption;
  session: Session;
  onConfirm(): void;
  onBack(): void;
}) {
  const [derived, setRule] = useState<DeriveResult | undefined>(undefined);
  const rule: DerivedRule | null | undefined = derived && "reason" in derived ? null : derived;
  const notRemembered = derived && "reason" in derived ? derived.reason : null;
  const [dry, setDry] = useState<DryRun | string | null>(null);
  // Keyboard focus follows the flow: after choosing "always", the next key press confirms or goes back.
  // In a layout effect, as the New session form does: focus a frame later let an early key press act elsewhere.
  const confirm = useRef<HTMLButtonElement>(null);
  useLayoutEffect(() => confirm.current?.focus(), []);
  useEffect(() => {
    const hash = crypto.subtle ? exactHash(p.toolCall) : Promise.resolve("");
    hash
      .then((exact) =>
        setRule(
          deriveRule({
            toolCall: p.toolCall,
            optionKind: option.kind,
            optionName: option.name,
            cwd: session.cwd,
            agent: session.agent,
            exactHash: exact,
          }),
        ),
      )
      .catch(() => setRule(null));
    api
      .post<DryRun>("/v1/rules/test", { toolCall: p.toolCall, options: p.options, cwd: session.cwd, agent: session.agent })
      .then(setDry)
      .catch((e: unknown) => setDry(`The dry run failed: ${errorText(e)}`));
  }, [p.key, option.optionId]);
  const allow = option.kind === "allow_always";
  return (
    <div class="confirm" role="group" aria-label="Confirm the rule">
      {rule === undefined && <p class="muted">Working out the rule…</p>}
      {rule === null && (
        <p class="warn">
          This answer will not be remembered as a rule{notRemembered ? `: ${shown(notRemembered).text}` : " (no rule may cover it)"}; it
          answers this request only.
        </p>
      )}
      {rule && (
        <>
          <p>
            <strong>{allow ? "This will store a team rule:" : "This will store a team rule:"}</strong>
          </p>
          <p class="rule-description">
            <Safe text={rule.description} />
          </p>
          <dl class="rule-scope">
            <dt>Decision</dt>
            <dd>
              <span class={`badge decision-${rule.decision}`}>{rule.decision}</span> without asking anyone
            </dd>
            <dt>Covers</dt>
            <dd>
              <Safe text={coversText(rule.matcher)} />
            </dd>
            <dt>Where</dt>
            <dd>
              <Safe text={scopeText(rule.scope, rule.matcher, rule.decision)} />
            </dd>
          </dl>
        </>
      )}
      <p class="muted dry-run">
        <Safe
          text={
            dry === null
              ? "Checking the team's current rules…"
              : typeof dry === "string"
                ? dry
                : dry.rule
                  ? `Already decided by an existing rule: “${dry.rule.description}” (${dry.decision}).`
                  : "Dry run: no current rule answers this request; people are asked today."
          }
        />
      </p>
      <div class="options">
        <button ref={confirm} class={`option ${allow ? "allow" : "reject"}`} onClick={onConfirm}>
          {shown(rule ? `Confirm: ${option.name}` : `Answer: ${option.name}`).text}
        </button>
        <button onClick={onBack}>Back</button>
      </div>
    </div>
  );
}
