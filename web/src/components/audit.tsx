// The decision audit: who or what resolved each permission request, newest first, filterable, and
// exportable as NDJSON (one JSON entry a line, every page of the current filter).

import { useCallback, useEffect, useState } from "preact/hooks";
import type { ApiAuditEntry as AuditEntry, ApiRule as Rule } from "../../../protocol/rest-api";
import { type Api, type AuditPageBody, type Page, query } from "../api";
import { dateTime, errorText } from "../format";
import { submittedFilter } from "../filter-form";
import { DisplayWarning, Safe, shown } from "./shown";

interface Filter {
  decidedBy?: string;
  agent?: string;
  user?: string;
  sessionId?: string;
}

const EXPORT_PAGES = 50;

export function AuditPage({ api }: { api: Api }) {
  const [filter, setFilter] = useState<Filter>({});
  const [entries, setEntries] = useState<AuditEntry[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [rules, setRules] = useState<Map<string, Rule>>(new Map());
  const [error, setError] = useState<string | null>(null);
  const [exporting, setExporting] = useState(false);
  const [budget, setBudget] = useState<AuditPageBody["budget"] | null>(null);

  const load = useCallback(
    async (cursor?: string) => {
      try {
        const page = await api.get<AuditPageBody>(`/v1/audit${query({ ...filter, cursor, limit: "100" })}`);
        setEntries((prev) => (cursor ? [...(prev ?? []), ...page.items] : page.items));
        setBudget(page.budget ?? null);
        setNext(page.nextCursor);
        setError(null);
      } catch (e) {
        setError(`Could not read the audit: ${errorText(e)}`);
      }
    },
    [api, filter],
  );
  useEffect(() => void load(), [load]);
  useEffect(() => {
    // Rule descriptions, so an entry decided by a rule says which one in words.
    api
      .get<Page<Rule>>("/v1/rules?limit=200")
      .then((page) => setRules(new Map(page.items.map((r) => [r.id, r]))))
      .catch(() => undefined);
  }, [api]);

  const exportNdjson = async () => {
    setExporting(true);
    try {
      const lines: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < EXPORT_PAGES; i++) {
        const page = await api.get<Page<AuditEntry>>(`/v1/audit${query({ ...filter, cursor, limit: "200" })}`);
        for (const item of page.items) lines.push(JSON.stringify(item));
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      const blob = new Blob(
        lines.map((l) => `${l}\n`),
        { type: "application/x-ndjson" },
      );
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = `acp-gateway-audit-${new Date().toISOString().slice(0, 19).replace(/:/g, "")}.ndjson`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    } catch (e) {
      setError(`Could not export the audit: ${errorText(e)}`);
    } finally {
      setExporting(false);
    }
  };

  return (
    <div class="page audit-page">
      <h2>Audit</h2>
      <p class="muted">How every permission request was resolved: by a person, by a team rule, or by the turn ending.</p>
      <form
        class="card filters"
        aria-label="Filter the audit"
        onSubmit={(e) => setFilter(submittedFilter(e, ["decidedBy", "agent", "user", "sessionId"] as const))}
      >
        <label>
          Decided by
          <select name="decidedBy">
            <option value="">anyone or anything</option>
            <option value="person">a person</option>
            <option value="link">an approval link</option>
            <option value="rule">a rule</option>
            <option value="cancel">a cancel</option>
            <option value="deadline">the deadline</option>
            <option value="turn_end">the turn ending</option>
            <option value="agent_disconnected">the agent disconnecting</option>
            <option value="agent_withdrew">the agent withdrawing</option>
          </select>
        </label>
        <label>
          Person
          <input name="user" autocomplete="off" />
        </label>
        <label>
          Agent
          <input name="agent" autocomplete="off" />
        </label>
        <label>
          Session
          <input name="sessionId" autocomplete="off" />
        </label>
        <button class="primary">Filter</button>
        <button type="button" onClick={() => void exportNdjson()} disabled={exporting}>
          {exporting ? "Exporting…" : "Export NDJSON"}
        </button>
      </form>
      {budget?.exhausted && (
        <p class="warn" role="note">
          The team's audit budget for today ({budget.bytesPerDay} bytes) is spent: until {dateTime(budget.resetsAt)}, entries keep who
          decided and the operation's length and SHA-256, not its text. Raise <code>limits.auditBytesPerDay</code> in the tenant's settings,
          or look for the agent sending so much.
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {entries?.length === 0 && <p class="muted">No decisions match.</p>}
      <ul class="audit-list">
        {entries?.map((e) => (
          <li key={e.id} class="card audit-entry" data-audit={e.id}>
            <div class="card-head">
              <span class="badge kind">{e.kind ?? "other"}</span>
              <span class={`badge outcome-${e.outcome}`}>{outcomeText(e)}</span>
              <span class="muted">{dateTime(e.at)}</span>
            </div>
            <Operation text={e.operation ?? e.name ?? "(no operation recorded)"} />
            <p class="decided-by">
              <Safe text={decidedByText(e, rules)} />
            </p>
            {e.reason && <p class="answer-reason">Reason: “{shown(e.reason).text}”</p>}
            <p class="muted small">
              agent <Safe text={e.agent} /> · session{" "}
              <a href={sessionHref(e.sessionId)} aria-label={`Open session ${shown(e.sessionId).text}`} onClick={sameSessionAgain}>
                <code>{shown(e.sessionId).text}</code>
              </a>
            </p>
          </li>
        ))}
      </ul>
      {next && <button onClick={() => void load(next)}>Load more</button>}
    </div>
  );
}

/** The console's address of a session (sessions.tsx opens the session it names). */
function sessionHref(sessionId: string): string {
  return `#/session/${encodeURIComponent(sessionId)}`;
}

/** A link to the session the address names already changes no hash: the views are told all the same. */
function sameSessionAgain(event: MouseEvent): void {
  const href = (event.currentTarget as HTMLAnchorElement).getAttribute("href");
  if (href === location.hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
}

function outcomeText(e: AuditEntry): string {
  if (e.outcome === "selected") return e.optionKind ?? e.optionId ?? "selected";
  return e.outcome;
}

function decidedByText(e: AuditEntry, rules: Map<string, Rule>): string {
  const by = e.decidedBy;
  switch (by.type) {
    case "person":
      return `Answered by ${by.user ?? "someone with a key"}${personText(by.person)}`;
    case "link":
      return `Answered through an approval link${by.user ? ` sent to ${by.user}` : ""}`;
    case "rule": {
      const rule = by.ruleId ? rules.get(by.ruleId) : undefined;
      return rule
        ? `Auto-answered by the team rule “${rule.description}”`
        : `Auto-answered by a team rule${by.ruleId ? ` (${by.ruleId})` : ""}`;
    }
    case "cancel":
      return by.user ? `Cancelled by ${by.user}` : "The turn was cancelled";
    case "deadline":
      return "Nobody answered before the deadline";
    case "turn_end":
      return "The turn ended first";
    case "agent_disconnected":
      return "The agent disconnected";
    case "agent_withdrew":
      return "The agent withdrew the request";
    default:
      return `Resolved (${String(by.type)})`;
  }
}

/**
 * The person behind the answer, as their provider names them (decision 0025): the subject at the
 * issuer's host, which is who they are; the display name before it is only what the token said.
 */
function personText(person: AuditEntry["decidedBy"]["person"]): string {
  if (!person) return "";
  if (person.issuer === "key") return ` (a key issued to ${person.subject})`;
  let host = person.issuer;
  try {
    host = new URL(person.issuer).host;
  } catch {
    // not a URL: shown as stored
  }
  return ` (${person.subject} at ${host})`;
}

/** The audited operation (the agent's command or paths): controls shown as symbols, with the warning above. */
function Operation({ text }: { text: string }) {
  const s = shown(text);
  return (
    <>
      <DisplayWarning escaped={s.escaped} />
      <pre class="code command">{s.text}</pre>
    </>
  );
}
