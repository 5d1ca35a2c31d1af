// The gateway's own "always allow" and "always reject" (decision 0042): for a request a rule could
// cover, the copy clients get carries the gateway's options, named by the rule it would store; chosen,
// the gateway stores the rule and the agent gets the `*_once` option it offered, never an "always".

import { describe, expect, it } from "vitest";
import { DEFAULT_OPTIONS, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";

const npmTest = (id: string) => ({ toolCallId: id, title: "npm test", kind: "execute", rawInput: { command: "npm test" } });

describe("the gateway's own always", () => {
  it("a request that offers no reject_always: the copy carries the gateway's allow and reject always, each named by its rule; choosing the reject stores a reject rule and the agent gets its reject_once", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const prompt = await startTurn(client, agent, sessionId);
    const asked = agent.askPermission(sessionId, npmTest("g1"));
    const copy = await client.next(isMethod("session/request_permission"));
    const ids = copy.params.options.map((o: { optionId: string }) => o.optionId);
    expect(ids).toEqual([...DEFAULT_OPTIONS.map((o) => o.optionId), "_acp_gateway/allow_always", "_acp_gateway/reject_always"]);
    const reject = copy.params.options.find((o: { optionId: string }) => o.optionId === "_acp_gateway/reject_always");
    expect(reject.kind).toBe("reject_always");
    expect(reject.name).toContain("`npm test`");
    expect(copy.params._meta.acpGateway.answerable.optionIds).toContain("_acp_gateway/reject_always");
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "_acp_gateway/reject_always" } });
    expect((await agent.peer.next(isResponseTo(asked))).result).toEqual({ outcome: { outcome: "selected", optionId: "reject" } });
    const created = await client.next(isMethod("_acp_gateway/rule_created"));
    expect(created.params.rule).toMatchObject({ decision: "reject" });
    expect(reject.name).toContain(created.params.rule.description);
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    await client.next(isResponseTo("turn"));
    // The rule holds: the same command in the next turn is rejected by the gateway with the agent's reject_once.
    await startTurn(client, agent, sessionId, "turn2");
    const again = agent.askPermission(sessionId, npmTest("g2"));
    expect((await agent.peer.next(isResponseTo(again))).result).toEqual({ outcome: { outcome: "selected", optionId: "reject" } });
  });

  it("choosing the gateway's allow always: the rule is stored and the agent gets allow_once, never its own allow_always", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const asked = agent.askPermission(sessionId, npmTest("g3"));
    const copy = await client.next(isMethod("session/request_permission"));
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "_acp_gateway/allow_always" } });
    expect((await agent.peer.next(isResponseTo(asked))).result).toEqual({ outcome: { outcome: "selected", optionId: "allow" } });
    const created = await client.next(isMethod("_acp_gateway/rule_created"));
    expect(created.params.rule).toMatchObject({ decision: "allow" });
  });

  it("a request no rule can cover (the command named twice) gets no gateway option; an agent offering an id in the gateway's namespace gets none either", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, { toolCallId: "a1", kind: "execute", rawInput: { command: "ls", cmd: "rm -rf /" } });
    const ambiguous = await client.next(isMethod("session/request_permission"));
    expect(ambiguous.params.options.map((o: { optionId: string }) => o.optionId)).toEqual(DEFAULT_OPTIONS.map((o) => o.optionId));
    const spoofing = [{ optionId: "_acp_gateway/allow_always", name: "Always", kind: "allow_once" }, ...DEFAULT_OPTIONS];
    agent.askPermission(sessionId, npmTest("a2"), spoofing);
    const copy = await client.next(isMethod("session/request_permission"));
    expect(copy.params.options).toEqual(spoofing);
  });
});
