// When the gateway refuses an agent's answer (too large, too deep: protocol/limits.ts), the request
// it answered must not wait for ever: the gateway stands in for it with an error under the request's
// id, which goes where the answer would have. Used by the edge (worker/agent-connection.ts) and by the
// AgentObject for a dial-out agent.

import { type ResponseMessage, RpcError, errorResponse, isObject } from "./jsonrpc";

/** The answer the gateway stands in for when the agent's own answer (naming `requestId`) was refused. */
export function refusedAnswer(reply: ResponseMessage | null): ResponseMessage | undefined {
  const data = reply?.error?.data;
  const requestId = isObject(data) ? data.requestId : undefined;
  if (reply?.id !== null || typeof requestId !== "number") return undefined;
  return errorResponse(requestId, RpcError.internal(`The agent's answer was refused by the gateway: ${reply.error?.message ?? "invalid"}`));
}
