// ACP's version negotiation at initialize (decision 0060): the gateway serves v1 only, to clients and to
// agents. A client asking a newer version is answered v1, as ACP says an agent answers a version it does
// not support (its latest), and the client then goes on in v1 or closes. The answer also says so in
// words, in `_meta`, because a v2 client's first messages would otherwise fail one by one (no
// `session/load` in v2, a `session/prompt` answered at acceptance, `capabilities` in place of
// `clientCapabilities`), far from their cause.

import { isObject } from "./jsonrpc";
import { PROTOCOL_VERSION } from "./methods";

export interface VersionNote {
  requested: number;
  served: number;
  message: string;
}

/** The note for a client that asked a version the gateway does not serve; undefined for one that asked v1 (or nothing readable). */
export function versionNote(params: unknown): VersionNote | undefined {
  const requested = isObject(params) ? params.protocolVersion : undefined;
  if (typeof requested !== "number" || !Number.isInteger(requested) || requested <= PROTOCOL_VERSION) return undefined;
  return {
    requested,
    served: PROTOCOL_VERSION,
    message: `This gateway serves ACP v${PROTOCOL_VERSION} only (v${requested} is a draft it does not relay yet). Go on with v${PROTOCOL_VERSION} messages — initialize's clientCapabilities, session/load to replay, session/prompt answered when the turn ends — or close the connection.`,
  };
}
