// The REST API's bodies (/v1/…) that the console reads, typed once: worker/api/ builds them (its
// zod schemas document them in the OpenAPI description, and the handlers return these types, so the
// compiler holds the two together) and web/src reads them. Types only.

import type { LinkDecidedBy, DecidedBy } from "./pending-permission";
import type { Rule } from "./rules/rules";
import type { FourEyesOperation, Role } from "../core/principal";
import type { Limits } from "./tenant-limits";
import type { UnaskedRuns } from "./unasked-runs";

/** A remembered decision as GET /v1/rules lists it: the engine's rule (rules.ts) and its history. */
export interface ApiRule extends Pick<Rule, "id" | "decision" | "matcher"> {
  scope: { project?: string; user?: string; agent?: string };
  description: string;
  expiresAt: number | null;
  createdBy: { key: string | null; user: string | null };
  createdFrom: { sessionId: string | null; toolCallId: string | null };
  createdAt: number;
  revokedAt: number | null;
  hits: number;
  lastHitAt: number | null;
}

/** How a permission request ended, as the audit records it (decision 0028: a refused answer, a first of two approvals). */
type AuditOutcome = "selected" | "cancelled" | "withdrawn" | "refused" | "approval_recorded" | "proposed";

/** One resolution of a permission request as GET /v1/audit lists it. */
export interface ApiAuditEntry {
  id: string;
  sessionId: string;
  agent: string;
  toolCallId: string | null;
  kind: string | null;
  name: string | null;
  operation: string | null;
  outcome: AuditOutcome;
  optionId: string | null;
  optionKind: string | null;
  decidedBy: {
    /** `agent`: an agent that reported a governed mode (decision 0061). */
    type: DecidedBy["type"] | LinkDecidedBy["type"] | "agent";
    key: string | null;
    user: string | null;
    ruleId: string | null;
    /** The person who decided, as their identity provider names them (issuer "key": a key issued to a user). */
    person: { issuer: string; subject: string } | null;
    /** Their role when they answered (decision 0028). */
    role: string | null;
    /** The client connection they answered from. */
    connectionId: string | null;
  };
  /** The policy that applied: four_eyes:not_prompter | four_eyes:two_approvals. */
  policy: string | null;
  /** Why a refused answer was refused; what a recorded first approval waits for. */
  reason: string | null;
  /** Under two approvals: the earlier approval(s). */
  approvedBy: { user: string | null; role: string; connectionId: string; at: number }[] | null;
  at: number;
}

/** The settings a tenant admin may change (PATCH /v1/tenant/settings), each as it applies: set, else its default. */
export interface ApiSettingValues {
  roles: { groups: Record<string, Role>; defaultPersonRole: Role };
  fourEyes: { operations: FourEyesOperation[]; keysApprove: boolean };
  modes: { forbid: string[]; forbidLessOversight: boolean };
  permissionDeadlineMs: number;
  relayAlwaysAsMade: boolean;
  unaskedRuns: UnaskedRuns;
  notifyAfterMs: number;
}

/** GET /v1/tenant/settings/effective (decision 0062): what applies, the defaults, the operator's limits, and whether the caller may change them. */
export interface ApiEffectiveSettings {
  settings: ApiSettingValues;
  defaults: ApiSettingValues;
  /** The settings of `settings` the tenant has set (the others are their defaults). */
  set: (keyof ApiSettingValues)[];
  /** The tenant's limits as they apply (the operator's: PATCH /v1/tenants/{id}), and their defaults. */
  limits: Limits;
  defaultLimits: Limits;
  /** The caller may change the settings (an admin); everyone else reads them. */
  mayChange: boolean;
}

/** A 400 of a settings change: what was wrong, by the field's path in the body (`fourEyes.operations.0`). */
export interface ApiFieldIssue {
  path: string;
  message: string;
}
