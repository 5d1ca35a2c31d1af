// Four eyes counts people, not credentials (decision 0041), in the real SessionObject: a second key
// issued to the prompter is the prompter; a freshly minted key with no person, and the admin key,
// cannot be the second approver unless the tenant says so (settings.fourEyes.keysApprove).

import { describe, expect, it } from "vitest";
import type { FourEyesSettings } from "../../core/principal";
import { addKey, attachClient, barrier, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";

const OPTIONS = [
  { optionId: "once", name: "Allow once", kind: "allow_once" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
];
const rm = { toolCallId: "c1", title: "Run", kind: "execute", rawInput: { command: "rm -rf /projects/demo/build" } };
const selected = (optionId: string) => ({ outcome: { outcome: "selected", optionId } });

async function held(fourEyes: FourEyesSettings) {
  const t = await seedTenant({ fourEyes });
  const ada = await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" });
  const agent = await dialInAgent(t);
  const { client: prompter, sessionId } = await clientWithSession(t, agent, ada);
  await startTurn(prompter, agent, sessionId);
  return { t, agent, prompter, sessionId };
}

describe("four eyes counts people", () => {
  it("a freshly minted key with no person is refused as second approver, and so is the admin key (both may reject)", async () => {
    const { t, agent, prompter, sessionId } = await held({ operations: [{ program: "rm" }] });
    const fresh = await addKey(t.tenantId, "client", "ci-bot", null, { role: "approver" });
    const second = await attachClient(t, agent, sessionId, fresh);
    const admin = await attachClient(t, agent, sessionId, t.adminKey);
    const asked = agent.askPermission(sessionId, rm, OPTIONS);
    const copy = await second.next(isMethod("session/request_permission"));
    expect(copy.params._meta.acpGateway.answerable).toEqual({ optionIds: ["no"], reason: expect.stringMatching(/names nobody/) });
    second.respond(copy.id, selected("once"));
    expect((await second.next((m) => m.id === null && m.error !== undefined)).error).toMatchObject({
      code: -32003,
      message: expect.stringMatching(/four eyes counts people.*names nobody.*keysApprove/),
    });
    const adminCopy = await admin.next(isMethod("session/request_permission"));
    admin.respond(adminCopy.id, selected("once"));
    expect((await admin.next((m) => m.id === null && m.error !== undefined)).error.code).toBe(-32003);
    await barrier(prompter, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === asked)).toEqual([]);
    // Nobody attached can approve it: everyone waiting is told.
    expect((await prompter.next(isMethod("_acp_gateway/four_eyes_unsatisfiable"))).params.reason).toMatch(/nobody attached can approve/);
    // Declining stays anyone's: the request is still pending, and the prompter rejects it.
    prompter.respond((await prompter.next(isMethod("session/request_permission"))).id, selected("no"));
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual(selected("no").outcome);
  });

  it("a second key issued to the prompter is the prompter: its approval is refused", async () => {
    const { t, agent, sessionId } = await held({ operations: [{ program: "rm" }] });
    const adasOther = await addKey(t.tenantId, "client", "ada (laptop)", null, { role: "approver", user: "ada" });
    const other = await attachClient(t, agent, sessionId, adasOther);
    agent.askPermission(sessionId, rm, OPTIONS);
    const copy = await other.next(isMethod("session/request_permission"));
    expect(copy.params._meta.acpGateway.answerable).toEqual({ optionIds: ["no"], reason: expect.stringMatching(/you prompted this turn/) });
  });

  it("a tenant that lets keys approve (keysApprove) counts a key with no person as the second approver", async () => {
    const { t, agent, sessionId } = await held({ operations: [{ program: "rm" }], keysApprove: true });
    const fresh = await addKey(t.tenantId, "client", "ci-bot", null, { role: "approver" });
    const second = await attachClient(t, agent, sessionId, fresh);
    const asked = agent.askPermission(sessionId, rm, OPTIONS);
    second.respond((await second.next(isMethod("session/request_permission"))).id, selected("once"));
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual(selected("once").outcome);
  });
});
