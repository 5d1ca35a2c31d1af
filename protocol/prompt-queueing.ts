// Prompt queueing (decision 0067): whether the agent takes a session/prompt while another of the same
// session is in flight, and how many the gateway lets be in flight at once. Pure.
//
// Read only where claude-agent-acp puts it, `agentCapabilities._meta.claudeCode.promptQueueing: true`
// (src/acp-agent.ts `initialize`): closed world, so any other place or any value but `true` is "no",
// and the session refuses a prompt while a turn runs, as it always did.

import { ErrorCode } from "../core/rpc-errors";
import { RpcError, isObject } from "./jsonrpc";

/**
 * How many prompts may be in flight in one session, the running one included. Five, as qwen-code's
 * `qwen serve` (PR #5033: 5 accepted-but-unsettled per session by default, `prompt_queue_full` past
 * it): enough for a person and a teammate to add a correction or two while the agent works, few
 * enough that a client in a loop cannot stack prompts whose answers each hold a request row and an
 * agent's task.
 */
export const PROMPTS_IN_FLIGHT_LIMIT = 5;

/** Whether the agent's `initialize` answer (its `agentCapabilities`) advertises prompt queueing where claude-agent-acp does. */
export function advertisesPromptQueueing(agentCapabilities: unknown): boolean {
  if (!isObject(agentCapabilities) || !isObject(agentCapabilities._meta)) return false;
  const claudeCode = agentCapabilities._meta.claudeCode;
  return isObject(claudeCode) && claudeCode.promptQueueing === true;
}

/** The refusal of a prompt past the bound (qwen's `prompt_queue_full`, in the -32600 family the gateway's turn refusals use). */
export function promptQueueFull(sessionId: string, inFlight: number): RpcError {
  return new RpcError(
    ErrorCode.invalidRequest,
    `Session ${sessionId} has ${inFlight} prompts in flight, the most the gateway lets one session have (${PROMPTS_IN_FLIGHT_LIMIT}); wait for one to be answered, or send session/cancel.`,
    { reason: "prompt_queue_full", limit: PROMPTS_IN_FLIGHT_LIMIT, inFlight },
  );
}
