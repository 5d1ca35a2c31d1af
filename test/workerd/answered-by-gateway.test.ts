// What the gateway answers an agent by itself is told to the clients: a permission request after a
// cancel, or while no turn runs (claude-agent-acp finishing a cancelled prompt's work after the next
// turn ended), gets `cancelled` from the gateway, and every client learns what was asked, why it was
// refused and what the agent got; clients that advertise ACP notices also get a `notice` update.

import { describe, expect, it } from "vitest";
import {
  type Peer,
  type ScriptedAgent,
  type SeededTenant,
  barrier,
  clientWithSession,
  connect,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
  startTurn,
  withoutCursor,
} from "./helpers";

const CANCELLED = { outcome: { outcome: "cancelled" } };
const run = (id: string, command: string) => ({ toolCallId: id, title: "Run it", kind: "execute", rawInput: { command } });

/** A second client on the session that advertised `session.notices` in initialize. */
async function noticesClient(t: SeededTenant, agent: ScriptedAgent, sessionId: string): Promise<Peer> {
  const client = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
  await client.request("initialize", { protocolVersion: 1, clientCapabilities: { session: { notices: {} } } });
  const loaded = await client.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
  if (loaded.error) throw new Error(JSON.stringify(loaded.error));
  return client;
}

const isNotice = (m: Record<string, unknown>) =>
  m.method === "session/update" && (m.params as { update?: { sessionUpdate?: string } }).update?.sessionUpdate === "notice";

describe("a request the gateway answers by itself is reported", () => {
  it("a request after session/cancel: every client is told the operation, that it came after the cancel, and that the agent got `cancelled`", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const watcher = await noticesClient(t, agent, sessionId);
    await startTurn(client, agent, sessionId);
    client.notify("session/cancel", { sessionId });
    await agent.peer.next(isMethod("session/cancel"));
    const asked = agent.askPermission(sessionId, run("late-1", "npm test"));
    expect((await agent.peer.next(isResponseTo(asked))).result).toEqual(CANCELLED);
    for (const peer of [client, watcher]) {
      const told = await peer.next(isMethod("_acp_gateway/answered_by_gateway"));
      expect(told.params).toMatchObject({
        sessionId,
        toolCallId: "late-1",
        reason: "after_cancel",
        agentGot: CANCELLED,
        operation: { kind: "execute", command: { text: "npm test" } },
      });
      expect(told.params.message).toContain("`npm test` after the turn was cancelled");
    }
    const notice = await watcher.next(isNotice);
    expect(withoutCursor(notice.params)).toEqual({
      sessionId,
      update: {
        sessionUpdate: "notice",
        severity: "warning",
        title: "A request after cancel was refused",
        description: expect.any(String),
      },
    });
    expect(notice.params.update.description).toContain("npm test");
    // The client that did not advertise notices gets none (only the gateway's own notification).
    await barrier(client, agent, sessionId);
    expect(client.unclaimed().filter(isNotice)).toEqual([]);
    expect(client.unclaimed().filter(isMethod("session/request_permission"))).toEqual([]);
  });

  it("a request while no turn runs (a cancelled prompt's late work): reported as outside a turn, as a notice too where advertised", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const watcher = await noticesClient(t, agent, sessionId);
    // A prompt cancelled and ended; then its work, still going in the agent, asks.
    const prompt = await startTurn(client, agent, sessionId);
    client.notify("session/cancel", { sessionId });
    await agent.peer.next(isMethod("session/cancel"));
    agent.peer.respond(prompt.id, { stopReason: "cancelled" });
    await client.next(isResponseTo("turn"));
    const asked = agent.askPermission(sessionId, {
      toolCallId: "late-2",
      title: "Edit",
      kind: "edit",
      locations: [{ path: "/projects/demo/src/a.ts" }],
    });
    expect((await agent.peer.next(isResponseTo(asked))).result).toEqual(CANCELLED);
    const told = await client.next(isMethod("_acp_gateway/answered_by_gateway"));
    expect(told.params).toMatchObject({ sessionId, toolCallId: "late-2", reason: "outside_turn", agentGot: CANCELLED });
    expect(told.params.message).toContain("edit /projects/demo/src/a.ts while no turn was running");
    expect((await watcher.next(isMethod("_acp_gateway/answered_by_gateway"))).params.toolCallId).toBe("late-2");
    const notice = await watcher.next(isNotice);
    expect(notice.params.update).toMatchObject({ severity: "warning", title: "A request outside a turn was refused" });
  });
});
