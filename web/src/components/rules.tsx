// The team's remembered decisions: list and filter, dry-run a request ("would this be
// auto-answered?"), revoke, and set or clear an expiry. What a key may not do (a client key may
// revoke only its own user's rules; expiry needs an admin key) comes back as the API's 403, shown.

import { useCallback, useEffect, useState } from "preact/hooks";
import type { ApiRule as Rule } from "../../../protocol/rest-api";
import { type Api, type DryRun, type Page, query } from "../api";
import { dateTime, errorText } from "../format";
import { submittedFilter } from "../filter-form";
import { coversText, scopeText } from "../rule-text";
import { Safe, shown } from "./shown";

interface Filter {
  decision?: string;
  agent?: string;
  project?: string;
  q?: string;
}

export function RulesPage({ api }: { api: Api }) {
  const [filter, setFilter] = useState<Filter>({});
  const [rules, setRules] = useState<Rule[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [showRevoked, setShowRevoked] = useState(false);

  const load = useCallback(async () => {
    try {
      const page = await api.get<Page<Rule>>(`/v1/rules${query({ ...filter, limit: "200" })}`);
      setRules(page.items);
      setError(null);
    } catch (e) {
      setError(`Could not list the rules: ${errorText(e)}`);
    }
  }, [api, filter]);
  useEffect(() => void load(), [load]);

  const visible = rules?.filter((r) => showRevoked || r.revokedAt === null) ?? [];
  return (
    <div class="page rules-page">
      <h2>Rules</h2>
      <p class="muted">Remembered “always” answers: a request a rule covers is answered without asking anyone.</p>
      <DryRunForm api={api} />
      <form
        class="card filters"
        aria-label="Filter the rules"
        onSubmit={(e) => setFilter(submittedFilter(e, ["decision", "agent", "project", "q"] as const))}
      >
        <label>
          Decision
          <select name="decision">
            <option value="">any</option>
            <option value="allow">allow</option>
            <option value="reject">reject</option>
          </select>
        </label>
        <label>
          Agent
          <input name="agent" autocomplete="off" />
        </label>
        <label>
          Project
          <input name="project" placeholder="/path" autocomplete="off" />
        </label>
        <label>
          Text
          <input name="q" placeholder="npm, README…" autocomplete="off" />
        </label>
        <label class="inline">
          <input type="checkbox" checked={showRevoked} onChange={(e) => setShowRevoked((e.currentTarget as HTMLInputElement).checked)} />{" "}
          Show revoked
        </label>
        <button class="primary">Filter</button>
      </form>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {rules !== null && visible.length === 0 && <p class="muted">No rules match.</p>}
      <ul class="rule-list">
        {visible.map((r) => (
          <li key={r.id}>
            <RuleCard api={api} rule={r} onChanged={() => void load()} />
          </li>
        ))}
      </ul>
    </div>
  );
}

function RuleCard({ api, rule: r, onChanged }: { api: Api; rule: Rule; onChanged(): void }) {
  const [error, setError] = useState<string | null>(null);
  const [confirmRevoke, setConfirmRevoke] = useState(false);
  const expired = r.expiresAt !== null && r.expiresAt <= Date.now();
  const act = async (what: () => Promise<unknown>) => {
    setError(null);
    try {
      await what();
      onChanged();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const setExpiry = (event: Event) => {
    event.preventDefault();
    const value = String(new FormData(event.currentTarget as HTMLFormElement).get("expires") ?? "");
    const at = value ? new Date(value).getTime() : NaN;
    if (!Number.isFinite(at) || at <= Date.now()) {
      setError("Choose a date and time in the future.");
      return;
    }
    void act(() => api.patch(`/v1/rules/${encodeURIComponent(r.id)}`, { expiresAt: at }));
  };
  return (
    <section
      class={`card rule ${r.revokedAt !== null ? "revoked" : ""}`}
      aria-label={`Rule: ${shown(r.description).text}`}
      data-rule={r.id}
    >
      <div class="card-head">
        <span class={`badge decision-${r.decision}`}>{r.decision}</span>
        {r.revokedAt !== null && <span class="badge">revoked {dateTime(r.revokedAt)}</span>}
        {expired && <span class="badge">expired</span>}
      </div>
      <p class="rule-description">
        <Safe text={r.description} />
      </p>
      <dl class="rule-scope">
        <dt>Covers</dt>
        <dd>
          <Safe text={coversText(r.matcher)} />
        </dd>
        <dt>Where</dt>
        <dd>
          <Safe text={scopeText(r.scope, r.matcher, r.decision)} />
        </dd>
        <dt>Made by</dt>
        <dd>
          <Safe text={r.createdBy.user ?? "a key"} /> on {dateTime(r.createdAt)}
        </dd>
        <dt>Used</dt>
        <dd>
          {r.hits} time{r.hits === 1 ? "" : "s"}
          {r.lastHitAt ? `, last ${dateTime(r.lastHitAt)}` : ""}
        </dd>
        <dt>Expires</dt>
        <dd>{r.expiresAt ? dateTime(r.expiresAt) : "never"}</dd>
      </dl>
      {r.revokedAt === null && (
        <div class="rule-actions">
          <form class="expiry" onSubmit={setExpiry}>
            <label>
              Expires at
              <input type="datetime-local" name="expires" />
            </label>
            <button>Set expiry</button>
            {r.expiresAt !== null && (
              <button type="button" onClick={() => void act(() => api.patch(`/v1/rules/${encodeURIComponent(r.id)}`, { expiresAt: null }))}>
                Never expire
              </button>
            )}
          </form>
          {confirmRevoke ? (
            <span class="options">
              <button class="danger" onClick={() => void act(() => api.delete(`/v1/rules/${encodeURIComponent(r.id)}`))}>
                Confirm revoke
              </button>
              <button onClick={() => setConfirmRevoke(false)}>Keep</button>
            </span>
          ) : (
            <button class="danger" onClick={() => setConfirmRevoke(true)}>
              Revoke
            </button>
          )}
        </div>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

/** "Would this be auto-answered?" — POST /v1/rules/test with a request described by hand. */
function DryRunForm({ api }: { api: Api }) {
  const [kind, setKind] = useState("execute");
  const [result, setResult] = useState<DryRun | string | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    const f = new FormData(event.currentTarget as HTMLFormElement);
    const target = String(f.get("target") ?? "").trim();
    const toolCall: Record<string, unknown> = { toolCallId: "dry-run", kind, title: "dry run" };
    if (kind === "execute") toolCall.rawInput = { command: target };
    else toolCall.locations = [{ path: target }];
    try {
      setResult(
        await api.post<DryRun>("/v1/rules/test", {
          toolCall,
          cwd: String(f.get("cwd") ?? ""),
          agent: String(f.get("agent") ?? ""),
          options: [
            { optionId: "allow", name: "Allow", kind: "allow_once" },
            { optionId: "reject", name: "Reject", kind: "reject_once" },
          ],
        }),
      );
    } catch (e) {
      setResult(`The dry run failed: ${errorText(e)}`);
    }
  };
  return (
    <form class="card dry-run-form" onSubmit={submit} aria-label="Dry run">
      <h3>Would this be auto-answered?</h3>
      <label>
        Kind
        <select value={kind} onChange={(e) => setKind((e.currentTarget as HTMLSelectElement).value)}>
          {["execute", "read", "edit", "delete", "move"].map((k) => (
            <option key={k}>{k}</option>
          ))}
        </select>
      </label>
      <label>
        {kind === "execute" ? "Command" : "Path"}
        <input name="target" required placeholder={kind === "execute" ? "npm test" : "/home/me/project/README.md"} autocomplete="off" />
      </label>
      <label>
        Project
        <input name="cwd" required placeholder="/home/me/project" autocomplete="off" />
      </label>
      <label>
        Agent
        <input name="agent" required defaultValue="demo" autocomplete="off" />
      </label>
      <button class="primary">Test</button>
      {result !== null && (
        <p class="dry-run-result" role="status">
          <Safe
            text={
              typeof result === "string"
                ? result
                : result.rule
                  ? `Yes: ${result.decision} by the rule “${result.rule.description}”${result.option ? `, answering “${result.option.name}”` : ""}.`
                  : "No: no rule covers it; a person would be asked."
            }
          />
        </p>
      )}
    </form>
  );
}
