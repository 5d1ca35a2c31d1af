// web/src/prompt-queue.ts: the console keeps Send on during a turn exactly when the gateway serves the
// agent's advertisement of prompt queueing (decision 0067), and says the gateway's refusals in words.
import { describe, expect, it } from "vitest";
import { AcpRequestError } from "../../web/src/rpc-error";
import { promptRefusal, queuesPrompts } from "../../web/src/prompt-queue";
import { promptQueueFull } from "../../protocol/prompt-queueing";

const refusal = (data: unknown, message = "refused") => new AcpRequestError("session/prompt", { code: -32600, message, data });

describe("prompt queueing in the console", () => {
  it("queues only when the served capabilities carry claude's advertisement, true and nothing else", () => {
    expect(queuesPrompts({ agentCapabilities: { _meta: { claudeCode: { promptQueueing: true } } } })).toBe(true);
    for (const agentCapabilities of [
      undefined,
      {},
      { _meta: { claudeCode: {} } },
      { _meta: { claudeCode: { promptQueueing: "true" } } },
      { _meta: { promptQueueing: true } },
      { promptQueueing: true },
    ])
      expect(queuesPrompts({ agentCapabilities })).toBe(false);
  });

  it("says the bound in words, with the gateway's number, and passes on a turn that takes no prompt now", () => {
    const full = promptQueueFull("s1", 5);
    expect(promptRefusal(refusal(full.data, full.message))).toBe(
      "Not sent: this turn already has 5 prompts in flight, the most the gateway takes. Send it again once the agent has answered one, or cancel the turn.",
    );
    expect(promptRefusal(refusal({ reason: "prompt_queue_full" }, "Session s1 has 5 prompts in flight"))).toBe(
      "Not sent: Session s1 has 5 prompts in flight",
    );
    expect(promptRefusal(refusal({ reason: "turn_in_progress" }, "The turn is being cancelled"))).toBe(
      "Not sent: The turn is being cancelled",
    );
  });

  it("is no refusal for any other failure: the turn's end says those", () => {
    expect(promptRefusal(refusal({ reason: "session_held" }))).toBeNull();
    expect(promptRefusal(refusal(undefined))).toBeNull();
    expect(promptRefusal(new Error("the connection to the gateway closed"))).toBeNull();
    expect(promptRefusal({ error: { data: { reason: "prompt_queue_full", limit: 5 } } })).toBeNull();
  });
});
