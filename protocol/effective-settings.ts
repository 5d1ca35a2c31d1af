// The tenant's settings as they apply: each one the tenant set, else its default (decision 0062). The
// defaults live here so that the code that applies a setting and the console page that explains it
// read the same number. Pure: the settings route (worker/api/settings.ts) passes the stored JSON and
// the gateway's PERMISSION_DEADLINE_MS.

import type { TenantSettings } from "../core/principal";
import { isObject } from "./jsonrpc";
import { roleOf } from "./people/roles";
import { unaskedRunsOf } from "./unasked-runs";
import type { ApiSettingValues } from "./rest-api";

/** How long a permission request waits for an answer when neither the tenant nor the gateway says (10 min). */
const DEFAULT_PERMISSION_DEADLINE_MS = 600_000;

/** How long a request waits with nobody attached before the notification targets are told, when the tenant does not say. */
export const DEFAULT_NOTIFY_AFTER_MS = 60_000;

/** The gateway's deadline for a permission request: PERMISSION_DEADLINE_MS when it is a positive number, else 10 min. */
export function gatewayPermissionDeadlineMs(fromEnv: string | undefined): number {
  const value = Number(fromEnv);
  return fromEnv !== undefined && Number.isFinite(value) && value > 0 ? value : DEFAULT_PERMISSION_DEADLINE_MS;
}

/** Every setting at its default: what a tenant that set nothing gets. */
export function defaultSettings(permissionDeadlineMs: number): ApiSettingValues {
  return {
    roles: { groups: {}, defaultPersonRole: "observer" },
    fourEyes: { operations: [], keysApprove: false },
    modes: { forbid: [], forbidLessOversight: false },
    permissionDeadlineMs,
    relayAlwaysAsMade: false,
    unaskedRuns: "stop",
    notifyAfterMs: DEFAULT_NOTIFY_AFTER_MS,
  };
}

/**
 * What applies: each setting as the code that applies it reads it (a value of the wrong type is the
 * default there too, e.g. an unknown `unaskedRuns` is `stop`), so the page never shows a value the
 * gateway does not use.
 */
export function effectiveSettings(stored: TenantSettings, defaults: ApiSettingValues): ApiSettingValues {
  const { roles, fourEyes, modes } = stored;
  return {
    roles: {
      groups: isObject(roles?.groups) ? { ...roles.groups } : defaults.roles.groups,
      // A person in no mapped group, as the gateway maps them.
      defaultPersonRole: roleOf({ credential: "token", groups: [] }, roles) ?? defaults.roles.defaultPersonRole,
    },
    fourEyes: {
      operations: Array.isArray(fourEyes?.operations) ? fourEyes.operations : defaults.fourEyes.operations,
      keysApprove: fourEyes?.keysApprove === true,
    },
    modes: {
      forbid: Array.isArray(modes?.forbid) ? modes.forbid : defaults.modes.forbid,
      forbidLessOversight: modes?.forbidLessOversight === true,
    },
    permissionDeadlineMs: positive(stored.permissionDeadlineMs) ?? defaults.permissionDeadlineMs,
    relayAlwaysAsMade: stored.relayAlwaysAsMade === true,
    unaskedRuns: unaskedRunsOf(stored),
    notifyAfterMs: typeof stored.notifyAfterMs === "number" && stored.notifyAfterMs >= 0 ? stored.notifyAfterMs : defaults.notifyAfterMs,
  };
}

function positive(value: unknown): number | undefined {
  return typeof value === "number" && value > 0 ? value : undefined;
}
