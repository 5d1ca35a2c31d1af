// The tenant settings page's form, pure (decision 0062): the settings as the page edits them (group
// names and operations as rows, forbidden modes as lines), what a save sends (only the settings that
// changed: PATCH replaces each given one), and the API's field issues placed by path.

import type { ApiFieldIssue, ApiSettingValues } from "../../protocol/rest-api";

type Role = ApiSettingValues["roles"]["defaultPersonRole"];
type Require = "not_prompter" | "two_approvals";

export interface OperationRow {
  kind: string;
  program: string;
  /** The command's first words, separated by spaces. */
  prefix: string;
  path: string;
  require: Require;
}

export interface Draft {
  groups: { group: string; role: Role }[];
  defaultPersonRole: Role;
  operations: OperationRow[];
  keysApprove: boolean;
  /** One forbidden mode or value a line. */
  forbid: string;
  forbidLessOversight: boolean;
  /** As typed: the API says what is wrong with it. */
  permissionDeadlineMs: string;
  relayAlwaysAsMade: boolean;
  unaskedRuns: ApiSettingValues["unaskedRuns"];
  notifyAfterMs: string;
}

export function draftOf(v: ApiSettingValues): Draft {
  return {
    groups: Object.entries(v.roles.groups).map(([group, role]) => ({ group, role })),
    defaultPersonRole: v.roles.defaultPersonRole,
    operations: v.fourEyes.operations.map((o) => ({
      kind: o.kind ?? "",
      program: o.program ?? "",
      prefix: (o.prefix ?? []).join(" "),
      path: o.path ?? "",
      require: o.require ?? "not_prompter",
    })),
    keysApprove: v.fourEyes.keysApprove,
    forbid: v.modes.forbid.join("\n"),
    forbidLessOversight: v.modes.forbidLessOversight,
    permissionDeadlineMs: String(v.permissionDeadlineMs),
    relayAlwaysAsMade: v.relayAlwaysAsMade,
    unaskedRuns: v.unaskedRuns,
    notifyAfterMs: String(v.notifyAfterMs),
  };
}

/** A number as typed; what is not one is sent as typed, so the API names the field that is wrong. */
function numberOf(text: string): number | string {
  const trimmed = text.trim();
  return trimmed !== "" && Number.isFinite(Number(trimmed)) ? Number(trimmed) : trimmed;
}

/** The draft as the PATCH body's settings. A group row without a name is left out; an operation is sent as typed, so the API says what it lacks. */
function bodyOf(d: Draft): Record<keyof ApiSettingValues, unknown> {
  return {
    roles: {
      groups: Object.fromEntries(d.groups.filter((g) => g.group.trim() !== "").map((g) => [g.group.trim(), g.role])),
      defaultPersonRole: d.defaultPersonRole,
    },
    fourEyes: {
      operations: d.operations.map((o) => {
        const words = o.prefix.trim().split(/\s+/).filter(Boolean);
        return {
          ...(o.kind.trim() ? { kind: o.kind.trim() } : {}),
          ...(o.program.trim() ? { program: o.program.trim() } : {}),
          ...(words.length > 0 ? { prefix: words } : {}),
          ...(o.path.trim() ? { path: o.path.trim() } : {}),
          require: o.require,
        };
      }),
      keysApprove: d.keysApprove,
    },
    modes: {
      forbid: d.forbid
        .split("\n")
        .map((line) => line.trim())
        .filter(Boolean),
      forbidLessOversight: d.forbidLessOversight,
    },
    permissionDeadlineMs: numberOf(d.permissionDeadlineMs),
    relayAlwaysAsMade: d.relayAlwaysAsMade,
    unaskedRuns: d.unaskedRuns,
    notifyAfterMs: numberOf(d.notifyAfterMs),
  };
}

/** An object's JSON with its keys sorted, so two equal settings compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

/**
 * What a save sends: each setting whose value differs from what applies now, and nothing else, so a
 * setting left at its default stays unset (and follows the default if the gateway's changes).
 */
export function changedSettings(d: Draft, applied: ApiSettingValues): Partial<Record<keyof ApiSettingValues, unknown>> {
  const body = bodyOf(d);
  const changed: Partial<Record<keyof ApiSettingValues, unknown>> = {};
  for (const key of Object.keys(body) as (keyof ApiSettingValues)[])
    if (canonical(body[key]) !== canonical(bodyOf(draftOf(applied))[key])) changed[key] = body[key];
  return changed;
}

/**
 * The issues that belong to the field at `path` (its own and those inside it), each worded with what
 * lies below the field: `fourEyes.operations` gets "operation 2: …" for `fourEyes.operations.1`.
 */
export function issuesAt(issues: readonly ApiFieldIssue[], path: string): string[] {
  return issues
    .filter((i) => i.path === path || i.path.startsWith(`${path}.`))
    .map((i) => {
      const below = i.path
        .slice(path.length + 1)
        .split(".")
        .filter(Boolean);
      const index = Number(below[0]);
      const where =
        below.length === 0
          ? ""
          : Number.isInteger(index)
            ? `row ${index + 1}${below.length > 1 ? ` (${below.slice(1).join(".")})` : ""}: `
            : `${below.join(".")}: `;
      return `${where}${i.message}`;
    });
}

/** The issues no field of the page shows: said at the top. */
export function issuesElsewhere(issues: readonly ApiFieldIssue[], fields: readonly string[]): ApiFieldIssue[] {
  return issues.filter((i) => !fields.some((f) => i.path === f || i.path.startsWith(`${f}.`)));
}

/** A duration in ms as people read it: "10 min", "1 h 30 min", "45 s", "0 s". */
export function durationText(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return `${ms} ms`;
  if (ms < 1000) return ms === 0 ? "0 s" : `${ms} ms`;
  const s = Math.round(ms / 1000);
  const parts: string[] = [];
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  if (d) parts.push(`${d} d`);
  if (h) parts.push(`${h} h`);
  if (m) parts.push(`${m} min`);
  if (rest) parts.push(`${rest} s`);
  return parts.join(" ");
}
