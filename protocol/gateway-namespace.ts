// The gateway's namespace is the gateway's. Clients trust `_acp_gateway/*` notifications and
// `_meta.acpGateway` marks as the gateway's own word (who resolved a request, which rule was created,
// which prompt was synthesised from whose connection), so an agent may not send them: its
// `_acp_gateway/*` methods are not relayed, and `acpGateway` is removed from the `_meta` objects where
// the gateway itself puts its marks. This is the one exception to relaying agent frames unchanged.

import { type Message, isObject } from "./jsonrpc";

const GATEWAY_METHOD_PREFIX = "_acp_gateway/";
const GATEWAY_META_KEY = "acpGateway";

export function isGatewayMethod(method: string): boolean {
  return method.startsWith(GATEWAY_METHOD_PREFIX);
}

/**
 * Removes `_meta.acpGateway` from the places the gateway marks: `params._meta` (synthesised prompts,
 * notices), `params.update._meta` (updates) and `result._meta` (answers such as session/new's, which
 * reach clients). A few property lookups on the parsed message, so a frame without marks costs
 * nothing and is relayed as its original text; true when something was removed (re-serialise then).
 * It looks at decoded keys, so an escaped spelling (`acpGatew\u0061y`) is removed too.
 */
export function stripGatewayMarks(message: Message): boolean {
  let removed = false;
  const strip = (holder: unknown) => {
    const meta = isObject(holder) ? holder._meta : undefined;
    if (isObject(meta) && GATEWAY_META_KEY in meta) {
      delete meta[GATEWAY_META_KEY];
      removed = true;
    }
  };
  if ("params" in message && isObject(message.params)) {
    strip(message.params);
    strip(message.params.update);
  }
  if ("result" in message) strip(message.result);
  return removed;
}
