// Roles (decision 0028): what each caller of a tenant may do, and where the role comes from.
// Pure: the edge (worker/auth.ts) computes a caller's role once per request or connection; the REST
// API, the client connection and the SessionObject ask `may` of that role. Guarantees:
// - Roles are ordered (observer < member < approver < admin < owner); each may all the lower ones may.
// - Unknown is least: a stored role, group mapping or default that is not a role grants nothing
//   beyond `observer` (never more than what is named).
// - Nobody grants a role above their own (keys, group mappings): `mayGrant`.
// - Backward compatible: a key stored without a role keeps what its kind could do before roles (an
//   admin key `owner`, a client key `approver`); a signed-in person in no mapped group is `observer`
//   unless the tenant names another default.

import { type KeyKind, ROLES, type Role, type RoleSettings } from "../../core/principal";

/** Everything a role may be asked about. */
export type Action =
  /** Attach to, load, list and read sessions, the audit and the rules. */
  | "watch"
  /** session/new, session/prompt, session/cancel and the other methods that change a session. */
  | "drive"
  /** Answer a permission request of a turn the caller prompted. */
  | "answer_own"
  /** Answer any permission request of the tenant. */
  | "answer_any"
  /** Switch a session to a mode or configuration that can make the agent ask less (protocol/people/modes.ts). */
  | "oversight"
  /** Create remembered decisions (rules) and revoke one's own; turn an "always" answer into a rule. */
  | "rules"
  /** Keys, agents, identity providers, notification targets, the tenant's settings, metrics. */
  | "administer";

const LEAST: Record<Action, Role> = {
  watch: "observer",
  drive: "member",
  answer_own: "member",
  answer_any: "approver",
  oversight: "approver",
  rules: "approver",
  administer: "admin",
};

function isRole(value: unknown): value is Role {
  return typeof value === "string" && (ROLES as readonly string[]).includes(value);
}

export function rank(role: Role): number {
  return ROLES.indexOf(role);
}

export function atLeast(role: Role | null, least: Role): boolean {
  return role !== null && rank(role) >= rank(least);
}

/** Whether `role` may do `action`. A caller without a role (an agent key) may do none of these. */
export function may(role: Role | null, action: Action): boolean {
  return atLeast(role, LEAST[action]);
}

/** The least role that may do `action`, for messages that say what would be needed. */
export function leastRoleFor(action: Action): Role {
  return LEAST[action];
}

/** Whether a caller of role `granter` may give `granted` to a key or a group: administrators, up to their own role. */
export function mayGrant(granter: Role | null, granted: Role): boolean {
  return may(granter, "administer") && granter !== null && rank(granted) <= rank(granter);
}

/** The caller whose role is asked: a key (its kind and stored role) or a person's token (their groups). */
export type RoleSource = { credential: "key"; kind: KeyKind; stored: string | null } | { credential: "token"; groups: readonly string[] };

/** The caller's role (see the guarantees at the top). */
export function roleOf(source: RoleSource, settings: RoleSettings | undefined): Role | null {
  if (source.credential === "key") {
    if (source.kind === "agent") return null;
    if (source.stored !== null) return isRole(source.stored) ? source.stored : "observer";
    return source.kind === "admin" ? "owner" : "approver";
  }
  const groups = settings?.groups ?? {};
  let best: Role | null = null;
  for (const group of source.groups) {
    if (!Object.hasOwn(groups, group)) continue;
    const mapped: unknown = groups[group];
    const role = isRole(mapped) ? mapped : "observer";
    if (best === null || rank(role) > rank(best)) best = role;
  }
  if (best !== null) return best;
  const fallback: unknown = settings?.defaultPersonRole;
  return isRole(fallback) ? fallback : "observer";
}
