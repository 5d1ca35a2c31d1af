// The demo agent works in the session's project (issue 38, item 3): its read and edit name the
// README.md of the session's cwd, so an "always" given in a session on /home/me/project (what the
// console's New session form suggests) makes a rule inside that project. Driven as the gateway
// drives it: the real demo/agent.ts over stdio, with the SDK's client.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/local-gateway";

type Json = Record<string, any>;
const agent = spawn(process.execPath, [join(ROOT, "demo", "agent.ts")], { stdio: ["pipe", "pipe", "inherit"] });
afterAll(() => agent.kill("SIGKILL"));

describe("the demo agent", () => {
  it("reads and edits README.md in the session's cwd, whatever it is", async () => {
    const calls: Json[] = [];
    const permissions: Json[] = [];
    const connection = client({ name: "test" })
      .onNotification("session/update", ({ params }) => {
        const update = (params as Json).update as Json;
        if (update.sessionUpdate === "tool_call") calls.push(update);
      })
      .onRequest("session/request_permission", ({ params }) => {
        permissions.push(params as Json);
        return { outcome: { outcome: "selected", optionId: "reject-once" } } as never;
      })
      .connect(
        ndJsonStream(Writable.toWeb(agent.stdin) as WritableStream<Uint8Array>, Readable.toWeb(agent.stdout) as ReadableStream<Uint8Array>),
      );
    await connection.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    for (const cwd of ["/home/me/project", "/srv/work/app"]) {
      calls.length = 0;
      permissions.length = 0;
      const { sessionId } = (await connection.agent.request("session/new", { cwd, mcpServers: [] })) as { sessionId: string };
      await connection.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hello" }] });
      const paths = calls.flatMap((c) => (c.locations ?? []).map((l: Json) => l.path));
      expect(paths).toEqual([`${cwd}/README.md`, `${cwd}/README.md`]);
      expect(permissions[0]?.toolCall?.rawInput).toEqual({ path: `${cwd}/README.md` });
    }
    connection.close();
  }, 30_000);
});
