// The held mode changes' table (durable-objects/session/mode-proposals.ts) in a real session object's
// SQLite. The session's alarm reads `count` and `dueAt` every time it is set (issue 40: they answer
// from memory once the table is known empty), so a change held after the table was read empty must
// still be counted and still set the alarm for its expiry, or it would never expire.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object";
import { type Held, ModeProposalTable } from "../../durable-objects/session/mode-proposals";
import { objects } from "../../durable-objects/objects";

const held = (id: string, expiresAt: number): Held => ({
  proposal: {
    id,
    operation: "session/set_mode modeId=bypassPermissions",
    change: { method: "session/set_mode", setting: "mode", value: "bypassPermissions" },
    proposer: { who: "key:ada", label: "ada" },
    proposedAt: expiresAt - 60_000,
    expiresAt,
  },
  client: {
    connId: "c1",
    keyId: "k1",
    user: "ada",
    role: "approver",
    caps: { readTextFile: false, writeTextFile: false, terminal: false },
    attachedAt: expiresAt - 60_000,
  },
  requestId: 1,
  method: "session/set_mode",
  params: { sessionId: "s", modeId: "bypassPermissions" },
});

describe("the held mode changes' table", () => {
  it("counts a change and gives its expiry after the table was read empty, and again after one was taken and put back", async () => {
    const stub = objects.session(env, `t_${crypto.randomUUID()}`, "s");
    await runInDurableObject(stub, (_: SessionObject, state) => {
      const table = new ModeProposalTable(state.storage.sql);
      expect(table.count()).toBe(0);
      expect(table.dueAt()).toBeUndefined();

      table.add(held("p1", 90_000));
      expect(table.count()).toBe(1);
      expect(table.dueAt()).toBe(90_000);

      const taken = table.take("p1");
      expect(table.count()).toBe(0);
      expect(table.dueAt()).toBeUndefined();
      table.put(taken as Held);
      expect(table.count()).toBe(1);
      expect(table.dueAt()).toBe(90_000);
    });
  });
});
