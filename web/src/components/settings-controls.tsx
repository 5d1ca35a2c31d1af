// The Settings page's controls (decision 0062): a section, one setting with what it does and its
// default and the API's issues for it, a checkbox, a role select, and a list of rows to add and remove.

import type { ComponentChildren } from "preact";

const ROLES = ["observer", "member", "approver", "admin", "owner"] as const;
export type Role = (typeof ROLES)[number];

export function Section({ title, set, children }: { title: string; set: boolean; children: ComponentChildren }) {
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
export function Field(props: { id: string; label: string; what: string; default: string; issues: string[]; children: ComponentChildren }) {
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

export function Check({ id, checked, onChange }: { id: string; checked: boolean; onChange(value: boolean): void }) {
  return <input id={id} type="checkbox" checked={checked} onChange={(e) => onChange(e.currentTarget.checked)} />;
}

export function RoleSelect({ id, value, onChange }: { id?: string; value: Role; onChange(role: Role): void }) {
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
export function Rows<T>(props: {
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
