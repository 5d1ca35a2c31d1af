/** @jsxImportSource hono/jsx */
// The approval page, rendered on the server: no JavaScript, readable at 360 px, light and dark.
// Everything shown comes from the session's copy of the request; the agent's title is labelled as
// the agent's words, and the command, paths and diffs are shown in full.

import type { Child } from "hono/jsx";
import type { ApprovalView } from "../../durable-objects/session/contract";
import { DISPLAY_WARNING, displayText } from "../../protocol/display-text";
import { lineDiff } from "../../protocol/line-diff";
import { MAX_ANSWER_REASON_CHARS } from "../../protocol/answer-reason";

type PendingView = Extract<ApprovalView, { state: "pending" }>;

const CSS = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--card:#f6f8fa;--allow:#1a7f37;--reject:#cf222e;--add:#dafbe1;--del:#ffebe9;--focus:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#30363d;--card:#161b22;--allow:#3fb950;--reject:#f85149;--add:#12361f;--del:#42151a;--focus:#4493f8}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:42rem;margin:0 auto;padding:1rem}
h1{font-size:1.35rem;margin:.25rem 0 .75rem}
h2{font-size:1rem;margin:1.25rem 0 .4rem}
.muted{color:var(--muted);font-size:.9rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.75rem;margin:.5rem 0}
.kind{display:inline-block;border:1px solid var(--line);border-radius:999px;padding:0 .6rem;font-size:.85rem;font-weight:600}
pre,code{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{margin:.25rem 0;padding:.5rem;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere;background:var(--bg);border:1px solid var(--line);border-radius:6px}
.diff{padding:0;white-space:pre-wrap}
.diff span{display:block;padding:0 .5rem}
.diff .add{background:var(--add)}
.diff .del{background:var(--del)}
blockquote{margin:.25rem 0;padding:.25rem .75rem;border-left:3px solid var(--line);font-style:italic}
ul{margin:.25rem 0;padding-left:1.25rem;overflow-wrap:anywhere}
form{display:grid;gap:.6rem;margin-top:1rem}
button{font:inherit;font-weight:600;min-height:48px;padding:.6rem 1rem;border-radius:8px;border:2px solid currentColor;background:var(--bg);cursor:pointer;text-align:left}
button.allow{color:var(--allow)}
button.reject{color:var(--reject)}
button small{display:block;font-weight:400;color:var(--muted)}
label{display:grid;gap:.25rem}
textarea{font:inherit;padding:.5rem;border:1px solid var(--line);border-radius:6px}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.notice{border-left:4px solid var(--focus)}
.warn{border-left:4px solid var(--reject)}
`;

function Page(props: { title: string; children: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <title>{props.title} · ACP gateway</title>
        <style>{CSS}</style>
      </head>
      <body>
        <main>{props.children}</main>
      </body>
    </html>
  );
}

const utc = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;

export function approvalPage(view: PendingView, error?: string) {
  // Every string the agent wrote is shown through displayText (decision 0022): terminal escapes,
  // direction overrides and invisible characters become symbols, and the page says so above.
  let escaped = 0;
  const t = (raw: string, multiline = false) => {
    const s = displayText(raw, { multiline });
    escaped += s.escaped;
    return s.text;
  };
  const raw = view.operation;
  const op = {
    kind: raw.kind === null ? null : t(raw.kind),
    name: raw.name === null ? null : t(raw.name),
    agentTitle: raw.agentTitle === null ? null : t(raw.agentTitle, true),
    command:
      raw.command === null
        ? null
        : { text: t(raw.command.text), argv: raw.command.argv?.map((a) => t(JSON.stringify(a))) ?? null, cwd: t(raw.command.cwd) },
    paths: raw.paths.map((p) => t(p)),
    diffs: raw.diffs.map((d) => ({
      path: t(d.path),
      lines: lineDiff(d.oldText, d.newText).map((l) => ({ op: l.op, text: t(l.text, true) })),
    })),
    rawInput: raw.rawInput === null ? null : t(JSON.stringify(raw.rawInput, null, 2) ?? "", true),
    // The operation names what runs or where more than once (operation.ts): show every field.
    ambiguity: raw.ambiguity ? t(raw.ambiguity) : null,
  };
  const session = {
    agent: t(view.session.agent),
    cwd: t(view.session.cwd),
    title: view.session.title === null ? null : t(view.session.title),
  };
  const options = (list: PendingView["options"]) => list.map((o) => ({ ...o, name: t(o.name), kind: t(o.kind) }));
  const linkOptions = options(view.linkOptions);
  const always = options(view.options.filter((o) => !view.linkOptions.includes(o)));
  const target = t(view.target);
  return (
    <Page title="Permission request">
      <p class="muted">
        Agent <strong>{session.agent}</strong> · project <code>{session.cwd || "(none)"}</code>
        {session.title ? ` · ${session.title}` : ""}
      </p>
      <h1>The agent asks permission</h1>
      {error ? <p class="card notice">{error}</p> : null}
      {escaped > 0 ? (
        <p class="card warn" role="note">
          ⚠ {DISPLAY_WARNING}
        </p>
      ) : null}
      {op.ambiguity ? (
        <p class="card warn" role="note">
          ⚠ This request has more than one meaning: {op.ambiguity}. The tool may run something other than the command shown, so read every
          field of the agent's raw input below; no rule answers it and it is never remembered.
        </p>
      ) : null}
      <div class="card">
        <span class="kind">{op.kind ?? "other"}</span> {op.name ? <code>{op.name}</code> : null}
        {op.command ? (
          <>
            <h2>Command</h2>
            <pre>{`$ ${op.command.text}`}</pre>
            {op.command.argv ? <p class="muted">Arguments: {op.command.argv.join(" ")}</p> : null}
            <p class="muted">
              Working directory: <code>{op.command.cwd || "(not given)"}</code>
            </p>
          </>
        ) : null}
        {op.paths.length > 0 ? (
          <>
            <h2>Paths</h2>
            <ul>
              {op.paths.map((p) => (
                <li>
                  <code>{p}</code>
                </li>
              ))}
            </ul>
          </>
        ) : null}
        {op.diffs.map((d) => (
          <>
            <h2>
              Change to <code>{d.path}</code>
            </h2>
            <pre class="diff">
              {d.lines.map((l) => (
                <span class={l.op === "+" ? "add" : l.op === "-" ? "del" : ""}>{`${l.op} ${l.text}`}</span>
              ))}
            </pre>
          </>
        ))}
        {op.agentTitle ? (
          <>
            <h2>The agent's description (its words, not checked by the gateway)</h2>
            <blockquote>{op.agentTitle}</blockquote>
          </>
        ) : null}
        {op.rawInput !== null ? (
          <details open={op.ambiguity !== null}>
            <summary class="muted">The agent's raw input</summary>
            <pre>{op.rawInput}</pre>
          </details>
        ) : null}
      </div>
      <p class="muted">
        Requested {utc(view.request.createdAt)}. Unanswered, it is cancelled at {utc(view.request.deadlineAt)}.
      </p>
      {linkOptions.length > 0 ? (
        <form method="post">
          <label>
            Reason (optional, shown with your answer)
            <textarea name="reason" rows={2} maxLength={MAX_ANSWER_REASON_CHARS} />
          </label>
          {linkOptions.map((o) => (
            <button type="submit" name="optionId" value={o.optionId} class={o.kind.startsWith("allow") ? "allow" : "reject"}>
              {o.name}
              <small>{o.kind}</small>
            </button>
          ))}
        </form>
      ) : (
        <p class="card notice">This request offers no one-time answer; answer it from the console or an editor.</p>
      )}
      {always.length > 0 ? (
        <p class="muted">
          Not offered here: {always.map((o) => `“${o.name}” (${o.kind})`).join(", ")}. A remembered rule is created only from the console or
          an editor, where the rule's scope is shown first.
        </p>
      ) : null}
      <p class="muted">
        This link answers this one request, once, until {utc(view.expiresAt)}. Sent to “{target}”.
      </p>
    </Page>
  );
}

/** A page that says why the link cannot answer (used, expired, answered, invalid) or that it did. */
export function messagePage(heading: string, lines: string[]) {
  return (
    <Page title={heading}>
      <h1>{heading}</h1>
      {lines.map((l) => (
        <p>{l}</p>
      ))}
    </Page>
  );
}
