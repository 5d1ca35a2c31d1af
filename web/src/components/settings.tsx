// The tenant's settings (decision 0062): what applies, each with one line on what it does and its
// default, read from GET /v1/tenant/settings/effective. An admin changes them (PATCH
// /v1/tenant/settings, only the settings changed); everyone else reads them greyed, told why. A refused
// save shows each of the API's issues beside its field and takes focus there. The operator's limits are
// shown read-only: they bound what the tenant costs everyone else.

import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { ApiEffectiveSettings, ApiFieldIssue, ApiSettingValues } from "../../../protocol/rest-api";
import { type Api, ApiError } from "../api";
import { errorText } from "../format";
import { type Draft, type OperationRow, changedSettings, draftOf, durationText, issuesAt, issuesElsewhere } from "../settings-form";

const ROLES = ["observer", "member", "approver", "admin", "owner"] as const;
type Role = (typeof ROLES)[number];

/** Every field the page shows, by its path in the PATCH body: an issue at none of them is said at the top. */
const FIELDS = [
  "roles.groups",
  "roles.defaultPersonRole",
  "fourEyes.operations",
  "fourEyes.keysApprove",
  "modes.forbid",
  "modes.forbidLessOversight",
  "permissionDeadlineMs",
  "relayAlwaysAsMade",
  "unaskedRuns",
  "notifyAfterMs",
] as const;
type FieldPath = (typeof FIELDS)[number];

const idOf = (path: FieldPath) => `setting-${path.replace(".", "-")}`;

export function SettingsPage({ api }: { api: Api }) {
  const [loaded, setLoaded] = useState<ApiEffectiveSettings | null>(null);
  const [draft, setDraft] = useState<Draft | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [issues, setIssues] = useState<ApiFieldIssue[]>([]);
  const [saved, setSaved] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const form = useRef<HTMLFormElement>(null);

  const load = async () => {
    try {
      const body = await api.get<ApiEffectiveSettings>("/v1/tenant/settings/effective");
      setLoaded(body);
      setDraft(draftOf(body.settings));
      setError(null);
    } catch (e) {
      setError(`Could not read the settings: ${errorText(e)}`);
    }
  };
  useEffect(() => void load(), [api]);

  // After a refused save, focus goes to the first field the API named (or the summary at the top).
  useEffect(() => {
    if (issues.length === 0) return;
    const first = FIELDS.find((f) => issuesAt(issues, f).length > 0);
    const target = first
      ? form.current?.querySelector<HTMLElement>(`#${idOf(first)}`)
      : form.current?.querySelector<HTMLElement>("#settings-error");
    target?.focus();
  }, [issues]);

  if (!loaded || !draft)
    return (
      <div class="page settings-page">
        <h2>Settings</h2>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : (
          <p class="muted">Reading the settings…</p>
        )}
      </div>
    );

  const change = (patch: Partial<Draft>) => {
    setSaved(null);
    setDraft({ ...draft, ...patch });
  };
  const changed = changedSettings(draft, loaded.settings);
  const dirty = Object.keys(changed).length > 0;

  const save = async (event: Event) => {
    event.preventDefault();
    if (!dirty) return;
    setBusy(true);
    setError(null);
    setIssues([]);
    setSaved(null);
    try {
      await api.patch("/v1/tenant/settings", changed);
      await load();
      setSaved(`Saved: ${Object.keys(changed).join(", ")}.`);
    } catch (e) {
      setError(
        e instanceof ApiError && e.issues.length > 0
          ? "Nothing was saved: the gateway refused some values (see each field)."
          : errorText(e),
      );
      if (e instanceof ApiError) setIssues([...e.issues]);
    } finally {
      setBusy(false);
    }
  };

  const d = loaded.defaults;
  const field = (path: FieldPath) => ({ id: idOf(path), issues: issuesAt(issues, path) });
  const elsewhere = issuesElsewhere(issues, FIELDS);
  return (
    <div class="page settings-page">
      <h2>Settings</h2>
      <p class="muted">How this tenant's gateway treats its people and agents. Each setting not set here is its default.</p>
      {!loaded.mayChange && (
        <p class="notice" role="note">
          You can read these settings; only a tenant admin can change them.
        </p>
      )}
      <form ref={form} onSubmit={save} aria-label="Tenant settings" noValidate>
        <fieldset class="settings-fields" disabled={!loaded.mayChange || busy}>
          <Section title="Roles" set={loaded.set.includes("roles")}>
            <Field
              {...field("roles.groups")}
              label="Groups"
              what="A person signed in through your provider gets the highest role any of their groups maps to."
              default="Default: no groups mapped."
            >
              <Rows
                id={idOf("roles.groups")}
                label="Group mappings"
                rows={draft.groups}
                empty="No groups mapped."
                add="Add a group"
                blank={{ group: "", role: "member" as Role }}
                onChange={(groups) => change({ groups })}
                render={(row, set, n) => (
                  <>
                    <label>
                      Group {n}
                      <input value={row.group} autocomplete="off" onInput={(e) => set({ ...row, group: e.currentTarget.value })} />
                    </label>
                    <label>
                      Role
                      <RoleSelect value={row.role} onChange={(role) => set({ ...row, role })} />
                    </label>
                  </>
                )}
              />
            </Field>
            <Field
              {...field("roles.defaultPersonRole")}
              label="Role of a person in no mapped group"
              what="What a signed-in person whose groups map to nothing may do."
              default={`Default: ${d.roles.defaultPersonRole}.`}
            >
              <RoleSelect
                id={idOf("roles.defaultPersonRole")}
                value={draft.defaultPersonRole}
                onChange={(defaultPersonRole) => change({ defaultPersonRole })}
              />
            </Field>
          </Section>

          <Section title="Four eyes" set={loaded.set.includes("fourEyes")}>
            <Field
              {...field("fourEyes.operations")}
              label="Operations a second person must approve"
              what="A request that matches every part given of a row is approved by someone other than the prompter, or by two people."
              default="Default: none."
            >
              <Rows
                id={idOf("fourEyes.operations")}
                label="Four-eyes operations"
                rows={draft.operations}
                empty="No operation needs a second person."
                add="Add an operation"
                blank={{ kind: "", program: "", prefix: "", path: "", require: "not_prompter" } satisfies OperationRow}
                onChange={(operations) => change({ operations })}
                render={(row, set, n) => (
                  <>
                    <label>
                      Kind {n}
                      <input
                        value={row.kind}
                        placeholder="execute, edit…"
                        autocomplete="off"
                        onInput={(e) => set({ ...row, kind: e.currentTarget.value })}
                      />
                    </label>
                    <label>
                      Program
                      <input
                        value={row.program}
                        placeholder="git"
                        autocomplete="off"
                        onInput={(e) => set({ ...row, program: e.currentTarget.value })}
                      />
                    </label>
                    <label>
                      Command starts with
                      <input
                        value={row.prefix}
                        placeholder="git push"
                        autocomplete="off"
                        onInput={(e) => set({ ...row, prefix: e.currentTarget.value })}
                      />
                    </label>
                    <label>
                      Path
                      <input
                        value={row.path}
                        placeholder="/srv/prod/**"
                        autocomplete="off"
                        onInput={(e) => set({ ...row, path: e.currentTarget.value })}
                      />
                    </label>
                    <label>
                      Needs
                      <select
                        value={row.require}
                        onChange={(e) => set({ ...row, require: e.currentTarget.value as OperationRow["require"] })}
                      >
                        <option value="not_prompter">anyone but the prompter</option>
                        <option value="two_approvals">two people</option>
                      </select>
                    </label>
                  </>
                )}
              />
            </Field>
            <Field
              {...field("fourEyes.keysApprove")}
              label="Keys count as a person"
              what="Let a credential that names nobody (the admin key, a key issued to no one) be the second approval."
              default={`Default: ${d.fourEyes.keysApprove ? "on" : "off"} (four eyes counts people).`}
            >
              <Check id={idOf("fourEyes.keysApprove")} checked={draft.keysApprove} onChange={(keysApprove) => change({ keysApprove })} />
            </Field>
          </Section>

          <Section title="Modes" set={loaded.set.includes("modes")}>
            <Field
              {...field("modes.forbid")}
              label="Forbidden modes and values"
              what="One a line: a session/set_mode or configuration value refused to everyone, whatever their role."
              default="Default: none."
            >
              <textarea
                id={idOf("modes.forbid")}
                rows={3}
                value={draft.forbid}
                onInput={(e) => change({ forbid: e.currentTarget.value })}
              />
            </Field>
            <Field
              {...field("modes.forbidLessOversight")}
              label="Forbid every mode that asks less"
              what="Refuse any mode or value that can make the agent ask people less, to everyone."
              default={`Default: ${d.modes.forbidLessOversight ? "on" : "off"} (approvers may switch).`}
            >
              <Check
                id={idOf("modes.forbidLessOversight")}
                checked={draft.forbidLessOversight}
                onChange={(forbidLessOversight) => change({ forbidLessOversight })}
              />
            </Field>
          </Section>

          <Section
            title="Requests"
            set={["permissionDeadlineMs", "relayAlwaysAsMade", "unaskedRuns", "notifyAfterMs"].some((k) =>
              loaded.set.includes(k as keyof ApiSettingValues),
            )}
          >
            <Field
              {...field("permissionDeadlineMs")}
              label="Deadline of a permission request (ms)"
              what="How long a request waits for a person before the gateway answers it cancelled."
              default={`Default: ${d.permissionDeadlineMs} (${durationText(d.permissionDeadlineMs)}).${readable(draft.permissionDeadlineMs)}`}
            >
              <input
                id={idOf("permissionDeadlineMs")}
                inputMode="numeric"
                value={draft.permissionDeadlineMs}
                onInput={(e) => change({ permissionDeadlineMs: e.currentTarget.value })}
              />
            </Field>
            <Field
              {...field("relayAlwaysAsMade")}
              label="Pass “always” on to the agent"
              what="Send a person's allow always / reject always to the agent as made, instead of as the once option (the gateway keeps the rule either way)."
              default={`Default: ${d.relayAlwaysAsMade ? "on" : "off"}.`}
            >
              <Check
                id={idOf("relayAlwaysAsMade")}
                checked={draft.relayAlwaysAsMade}
                onChange={(relayAlwaysAsMade) => change({ relayAlwaysAsMade })}
              />
            </Field>
            <Field
              {...field("unaskedRuns")}
              label="An agent that runs a tool unasked"
              what="Stop the session until an approver resumes it, or only tell every client."
              default={`Default: ${d.unaskedRuns}.`}
            >
              <select
                id={idOf("unaskedRuns")}
                value={draft.unaskedRuns}
                onChange={(e) => change({ unaskedRuns: e.currentTarget.value === "tell" ? "tell" : "stop" })}
              >
                <option value="stop">stop the session</option>
                <option value="tell">only tell</option>
              </select>
            </Field>
            <Field
              {...field("notifyAfterMs")}
              label="Notify after (ms)"
              what="How long a request waits with nobody attached before the notification targets are told."
              default={`Default: ${d.notifyAfterMs} (${durationText(d.notifyAfterMs)}).${readable(draft.notifyAfterMs)}`}
            >
              <input
                id={idOf("notifyAfterMs")}
                inputMode="numeric"
                value={draft.notifyAfterMs}
                onInput={(e) => change({ notifyAfterMs: e.currentTarget.value })}
              />
            </Field>
          </Section>
        </fieldset>
        {error && (
          <div id="settings-error" class="error" role="alert" tabIndex={-1}>
            {error}
            {elsewhere.map((i) => (
              <div key={i.path}>
                {i.path || "body"}: {i.message}
              </div>
            ))}
          </div>
        )}
        {saved && (
          <p class="notice" role="status">
            {saved}
          </p>
        )}
        {loaded.mayChange && (
          <div class="settings-actions">
            <button class="primary" disabled={busy || !dirty}>
              {busy ? "Saving…" : "Save settings"}
            </button>
            <button
              type="button"
              class="quiet"
              disabled={busy || !dirty}
              onClick={() => (setDraft(draftOf(loaded.settings)), setIssues([]), setError(null))}
            >
              Undo changes
            </button>
          </div>
        )}
      </form>
      <Limits loaded={loaded} />
    </div>
  );
}

/** " Now: 1 h." for a typed number of ms, so the field reads as time; nothing for what is not a number. */
function readable(typed: string): string {
  const ms = Number(typed.trim());
  return typed.trim() !== "" && Number.isFinite(ms) ? ` Now: ${durationText(ms)}.` : "";
}

function Section({ title, set, children }: { title: string; set: boolean; children: ComponentChildren }) {
  return (
    <section class="card settings-section" aria-label={title}>
      <div class="card-head">
        <h3>{title}</h3>
        <span class="badge">{set ? "set by the tenant" : "defaults"}</span>
      </div>
      {children}
    </section>
  );
}

/** One setting: its label, what it does and its default in one line each, the control, and the API's issues for it. */
function Field(props: { id: string; label: string; what: string; default: string; issues: string[]; children: ComponentChildren }) {
  const help = `${props.id}-help`;
  const problems = `${props.id}-issues`;
  return (
    <div
      class={`setting${props.issues.length > 0 ? " invalid" : ""}`}
      role="group"
      aria-labelledby={`${props.id}-label`}
      aria-describedby={`${help}${props.issues.length > 0 ? ` ${problems}` : ""}`}
    >
      <label id={`${props.id}-label`} for={props.id} class="setting-label">
        {props.label}
      </label>
      <p class="hint" id={help}>
        {props.what} {props.default}
      </p>
      <div class="setting-control">{props.children}</div>
      {props.issues.length > 0 && (
        <ul class="error field-issues" id={problems}>
          {props.issues.map((text) => (
            <li key={text}>{text}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

function Check({ id, checked, onChange }: { id: string; checked: boolean; onChange(value: boolean): void }) {
  return <input id={id} type="checkbox" checked={checked} onChange={(e) => onChange(e.currentTarget.checked)} />;
}

function RoleSelect({ id, value, onChange }: { id?: string; value: Role; onChange(role: Role): void }) {
  return (
    <select id={id} value={value} onChange={(e) => onChange(ROLES.find((r) => r === e.currentTarget.value) ?? "observer")}>
      {ROLES.map((r) => (
        <option key={r} value={r}>
          {r}
        </option>
      ))}
    </select>
  );
}

/** A list of rows the person adds to and removes from; the list itself takes focus (its id) after a refused save. */
function Rows<T>(props: {
  id: string;
  label: string;
  rows: T[];
  empty: string;
  add: string;
  blank: T;
  onChange(rows: T[]): void;
  render(row: T, set: (row: T) => void, n: number): ComponentChildren;
}) {
  const { rows, onChange } = props;
  return (
    <div id={props.id} class="setting-rows" tabIndex={-1} aria-label={props.label}>
      {rows.length === 0 && <p class="muted small">{props.empty}</p>}
      {rows.map((row, i) => (
        <div class="setting-row" key={i}>
          {props.render(row, (next) => onChange(rows.map((r, j) => (j === i ? next : r))), i + 1)}
          <button type="button" class="quiet" aria-label={`Remove row ${i + 1}`} onClick={() => onChange(rows.filter((_, j) => j !== i))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" onClick={() => onChange([...rows, props.blank])}>
        {props.add}
      </button>
    </div>
  );
}

const LIMIT_WORDS: Record<string, string> = {
  messagesPerSecondPerConnection: "Messages a second, one client connection",
  messagesPerSecondPerAgentConnection: "Messages a second, one agent connection",
  heldBytesPerAgentConnection: "Bytes held for a fast agent connection",
  messagesPerSecondPerTenant: "Messages a second, the whole tenant",
  connectionsPerKey: "Connections open under one key",
  liveSessionsPerTenant: "Live sessions",
  pendingPermissionsPerSession: "Requests waiting in one session",
  turnIdleMs: "A turn ends after this long without a word from the agent (ms)",
  outsideTurnAuditsPerMinute: "Requests outside a turn audited one by one, a minute",
  auditBytesPerDay: "Bytes of decision audit a day",
  rulesPerTenant: "Rules",
  ruleBytesPerTenant: "Bytes of rules",
  notificationTargetsPerTenant: "Notification targets",
};

/** The operator's limits, read-only for everyone in the tenant. */
function Limits({ loaded }: { loaded: ApiEffectiveSettings }) {
  return (
    <section class="card settings-section" aria-labelledby="limits-title">
      <h3 id="limits-title">Limits</h3>
      <p class="hint">Set by the gateway's operator: they bound what this tenant costs everyone else. Ask the operator to change one.</p>
      <table class="limits">
        <thead>
          <tr>
            <th scope="col">Limit</th>
            <th scope="col">Now</th>
            <th scope="col">Default</th>
          </tr>
        </thead>
        <tbody>
          {(Object.keys(loaded.limits) as (keyof ApiEffectiveSettings["limits"])[]).map((k) => (
            <tr key={k}>
              <th scope="row">{LIMIT_WORDS[k] ?? k}</th>
              <td>{loaded.limits[k].toLocaleString()}</td>
              <td class="muted">{loaded.defaultLimits[k].toLocaleString()}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
