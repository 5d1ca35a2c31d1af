// A `session/request_permission`'s options and the gateway's marks on its params. A client's answer
// is judged against the options in people/answering.ts (`authoriseAnswer`), with who may choose them.

import { isObject } from "./jsonrpc";

type OptionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always";

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: OptionKind | string;
}

export function offeredOptions(params: unknown): PermissionOption[] {
  if (!isObject(params) || !Array.isArray(params.options)) return [];
  return params.options.filter((o): o is PermissionOption => isObject(o) && typeof o.optionId === "string" && typeof o.kind === "string");
}

export const CANCELLED_RESULT = { outcome: { outcome: "cancelled" } } as const;

/**
 * Told to the people asked when the tenant's remembered decisions (rules) could not be read: the
 * request reached them without any rule having been applied, so an "always" they chose earlier did
 * not answer it. Sent once as `GATEWAY_NOTIFICATIONS.rulesUnavailable`, and as `_meta.acpGateway.rulesUnavailable` on every
 * copy of the request (also those sent to a client attaching later).
 */
export const RULES_UNAVAILABLE_MESSAGE =
  "The tenant's remembered decisions (rules) could not be consulted, so none was applied to this request; it is asked of you instead.";

/** The request's params with `_meta.acpGateway.rulesUnavailable` set (the agent's own `_meta` kept). */
export function markedRulesUnknown(paramsText: string): string {
  return withGatewayMeta(paramsText, { rulesUnavailable: { message: RULES_UNAVAILABLE_MESSAGE } });
}

/**
 * The request's params with `fields` set in `_meta.acpGateway`: the agent's own `_meta`, and the
 * gateway's fields not named, kept as they are. Params that are not an object are returned untouched.
 */
export function withGatewayMeta(paramsText: string, fields: Record<string, unknown>): string {
  const params = JSON.parse(paramsText) as unknown;
  if (!isObject(params)) return paramsText;
  const meta = isObject(params._meta) ? params._meta : {};
  const gateway = isObject(meta.acpGateway) ? meta.acpGateway : {};
  return JSON.stringify({ ...params, _meta: { ...meta, acpGateway: { ...gateway, ...fields } } });
}
