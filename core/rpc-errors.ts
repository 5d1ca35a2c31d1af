// Every JSON-RPC error code the gateway answers with, in one place (protocol/jsonrpc.ts's RpcError
// carries them). The first eight are JSON-RPC's and ACP's; -32003 and -32029 are the gateway's own, in the
// implementation-defined server range: a refusal by role (403 in spirit), by a limit (429 in spirit).

export const ErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  requestCancelled: -32800,
  authRequired: -32000,
  resourceNotFound: -32002,
  /** The caller's role may not do this (decision 0028): an observer prompting, a member answering another's turn… */
  notPermitted: -32003,
  limitExceeded: -32029,
} as const;

/**
 * `session/attach`'s own codes, as the draft RFD "Multi-Client Session Attach" (PR #533) assigns them
 * (decision 0054). They clash with v1's: there -32002 is "resource not found" and the gateway's
 * -32003 a refusal by role; these are answered to session/attach only.
 */
export const AttachErrorCode = {
  notFound: -32001,
  notAuthorised: -32002,
  unsupported: -32003,
} as const;
