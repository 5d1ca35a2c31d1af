// Prompt queueing in the console (decision 0067): for an agent whose served capabilities advertise
// it, a prompt sent while a turn runs joins that turn, so Send stays on; the gateway's refusals of a
// prompt (the bound, a turn being cancelled) are said in words and leave the turn as it is.

import { AcpRequestError } from "./rpc-error";
import { advertisesPromptQueueing } from "../../protocol/prompt-queueing";
import { isObject } from "../../protocol/jsonrpc";

/** Whether the gateway's initialize answer serves the agent's advertisement (served-capabilities.ts keeps only claude's). */
export function queuesPrompts(init: Record<string, unknown>): boolean {
  return advertisesPromptQueueing(init.agentCapabilities);
}

/**
 * What to tell the person when the gateway refused a prompt without running it: the bound
 * (`prompt_queue_full`) or a turn that takes no prompt now (`turn_in_progress`). Null for any other
 * failure (the turn's own end says it).
 */
export function promptRefusal(error: unknown): string | null {
  if (!(error instanceof AcpRequestError) || !isObject(error.error.data)) return null;
  const data = error.error.data;
  if (data.reason === "prompt_queue_full")
    return typeof data.limit === "number"
      ? `Not sent: this turn already has ${data.limit} prompts in flight, the most the gateway takes. Send it again once the agent has answered one, or cancel the turn.`
      : `Not sent: ${error.error.message}`;
  if (data.reason === "turn_in_progress") return `Not sent: ${error.error.message}`;
  return null;
}
