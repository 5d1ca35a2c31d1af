// The tenant's settings (decision 0062): what applies, each with one line on what it does and its
// default, read from GET /v1/tenant/settings/effective. An admin changes them (PATCH
// /v1/tenant/settings, only the settings changed); everyone else reads them greyed, told why. A refused
// save shows each of the API's issues beside its field and takes focus there. The operator's limits are
// shown read-only: they bound what the tenant costs everyone else.

import { useEffect, useRef, useState } from "preact/hooks";
import type { ApiEffectiveSettings, ApiFieldIssue, ApiSettingValues } from "../../../protocol/rest-api";
import { type Api, ApiError } from "../api";
import { errorText } from "../format";
import { type Draft, type OperationRow, changedSettings, draftOf, durationText, issuesAt, issuesElsewhere } from "../settings-form";
import { Check, Field, type Role, RoleSelect, Rows, Section } from "./settings-controls";
import { Limits } from "./settings-limits";

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

/** The settings the Requests section shows. */
const REQUEST_SETTINGS: readonly (keyof ApiSettingValues)[] = ["permissionDeadlineMs", "relayAlwaysAsMade", "unaskedRuns", "notifyAfterMs"];

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
                        onChange={(e) =>
                          set({ ...row, require: e.currentTarget.value === "two_approvals" ? "two_approvals" : "not_prompter" })
                        }
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

          <Section title="Requests" set={REQUEST_SETTINGS.some((k) => loaded.set.includes(k))}>
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
              onClick={() => {
                setDraft(draftOf(loaded.settings));
                setIssues([]);
                setError(null);
              }}
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
