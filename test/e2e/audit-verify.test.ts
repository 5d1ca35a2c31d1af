// The audit export and `acp-gateway audit verify` as a SIEM would use them (decision 0024): a
// person's answers, exported from the running gateway, verified by the CLI; one line edited, and the
// CLI names its line and exits 1.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { connectClient, dialInAgent, waitForAgent } from "./peers";
import { exitOf, killAll, startCli } from "./processes";

const url = inject("gatewayUrl");
const keys = inject("keys");
const dir = mkdtempSync(join(tmpdir(), "acp-audit-"));
afterAll(() => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});

async function verifyWithCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = startCli(["audit", "verify", ...args], {});
  let stdout = "";
  cli.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  const code = await exitOf(cli);
  return { code, stdout, stderr: cli.log.join("") };
}

describe("acp-gateway audit verify on a real export", () => {
  it("verifies the tenant's exported chain, and names the line of a tampered entry with exit code 1", async () => {
    const name = `audit-${Date.now()}`;
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (turn) => {
        for (const i of [1, 2]) {
          await turn.askPermission({ toolCallId: `v${i}`, title: "Run", kind: "execute", rawInput: { command: `echo audited ${i}` } });
        }
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const client = await connectClient({ url, key: keys.client, agent: name });
    const { sessionId } = await client.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const prompt = client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
    for (const n of [1, 2]) {
      const asked = await client.permissions.waitFor((p) => p.params.toolCall.toolCallId === `v${n}`);
      asked.answer({ outcome: { outcome: "selected", optionId: "allow-once" } });
    }
    expect(await prompt).toMatchObject({ stopReason: "end_turn" });

    // The audit is written off the hot path: export until both answers are in the chain.
    let body = "";
    let end = "";
    await expect
      .poll(
        async () => {
          const res = await fetch(`${url}/v1/audit/export`, { headers: { Authorization: `Bearer ${keys.admin}` } });
          body = await res.text();
          end = res.headers.get("Acp-Audit-Chain-End") ?? "";
          return body.split("\n").filter((l) => l.includes(`"sessionId":"${sessionId}"`)).length;
        },
        { timeout: 15_000 },
      )
      .toBe(2);
    const file = join(dir, "export.ndjson");
    writeFileSync(file, body);
    const good = await verifyWithCli(["--end", end, file]);
    expect(good.stderr).toBe("");
    expect(good.code).toBe(0);
    expect(good.stdout).toBe(
      `ok: ${body.split("\n").length - 1} links of tenant ${JSON.parse(body.split("\n")[0] as string).tenantId}; last ${end}\n`,
    );

    // One line edited: the second answer recorded as a rejection.
    const lines = readFileSync(file, "utf8").split("\n");
    const at = lines.findIndex((l) => l.includes(`"toolCallId":"v2"`) && l.includes(`"sessionId":"${sessionId}"`));
    expect(at).toBeGreaterThanOrEqual(0);
    lines[at] = (lines[at] as string).replace('"optionId":"allow-once"', '"optionId":"reject-once"');
    expect(lines[at]).toContain('"optionId":"reject-once"');
    const tampered = join(dir, "tampered.ndjson");
    writeFileSync(tampered, lines.join("\n"));
    const bad = await verifyWithCli(["--end", end, tampered]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toMatch(
      new RegExp(`^${tampered.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:${at + 1}: edited: seq \\d+: its hash does not match its content`),
    );

    client.close();
    agent.close();
  }, 60_000);
});
