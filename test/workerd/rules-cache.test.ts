// A tenant with no rules pays nothing for the rules path: the session learns "no rules" from the
// RulesObject once and skips the call; the first rule created through the API applies to the very
// next request, because the API answers only after every such session was told.

import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, onTestFinished } from "vitest";
import type { RulesObject } from "../../durable-objects/rules/rules-object";
import { DEFAULT_OPTIONS, clientWithSession, dialInAgent, isMethod, seedTenant } from "./helpers";

describe("the rules path for a tenant with no rules", () => {
  it("asks the RulesObject once, then not again, and applies the first rule created through the API at once", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "norules");
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
    await agent.peer.next(isMethod("session/prompt"));

    const rules = env.RULES.get(env.RULES.idFromName(t.tenantId));
    // Count the calls that reach the RulesObject (RPC serves prototype methods: wrap it there).
    let calls = 0;
    let restore = () => undefined as void;
    await runInDurableObject(rules, (instance: RulesObject) => {
      const proto = Object.getPrototypeOf(instance) as RulesObject;
      const decideFor = proto.decideFor;
      proto.decideFor = function (this: RulesObject, ...args) {
        calls++;
        return decideFor.apply(this, args);
      };
      restore = () => {
        proto.decideFor = decideFor;
      };
    });
    onTestFinished(() => restore());
    const ask = async (i: number, command: string) => {
      const id = agent.askPermission(sessionId, { toolCallId: `tc${i}`, kind: "execute", rawInput: { command } }, DEFAULT_OPTIONS);
      return id;
    };
    for (let i = 0; i < 3; i++) {
      const id = await ask(i, `make ${i}`);
      const copy = await client.next(isMethod("session/request_permission"));
      client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
      await agent.peer.next((m) => m.id === id);
    }
    expect(calls).toBe(1);

    const created = await SELF.fetch("http://gateway.test/v1/rules", {
      method: "POST",
      headers: { Authorization: `Bearer ${t.adminKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ decision: "allow", matcher: { type: "command", prefix: ["npm", "test"] } }),
    });
    expect(created.status).toBe(201);
    // The very next request is answered by the rule, without asking anyone.
    const id = await ask(9, "npm test");
    const answer = await agent.peer.next((m) => m.id === id);
    expect(answer.result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    const resolved = await client.next((m) => m.method === "_acp_gateway/permission_resolved" && m.params.toolCallId === "tc9");
    expect(resolved.params.decidedBy.type).toBe("rule");
    expect(client.unclaimed().filter((m) => m.method === "session/request_permission")).toEqual([]);
    expect(calls).toBe(2);
  });
});
