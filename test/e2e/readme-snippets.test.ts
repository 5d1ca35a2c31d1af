// The README's client snippet runs as written: the code block under "Connect over WebSocket or
// Streamable HTTP" is taken from README.md's own text, pointed at the test gateway (only the host
// and the agent's name change), and run with Node against it, over both transports.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { ROOT } from "../../scripts/local-gateway";
import { dialInAgent, waitForAgent } from "./peers";
import { NODE } from "./processes";

const url = inject("gatewayUrl");
const keys = inject("keys");

/** The first ```ts block after the heading, as the README has it. */
function snippetAfter(heading: string): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const at = readme.indexOf(heading);
  if (at < 0) throw new Error(`README.md has no heading ${heading}`);
  const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!block?.[1]) throw new Error(`no ts block after ${heading}`);
  return block[1];
}

describe("the README's snippets", () => {
  it("the WebSocket and Streamable HTTP client snippet initializes over both transports, as written", async () => {
    const name = `readme-${crypto.randomUUID().slice(0, 8)}`;
    const agent = await dialInAgent({ url, key: keys.agent, name, script: async () => "end_turn" });
    try {
      await waitForAgent(url, keys.client, name);
      const code = snippetAfter("### Connect over WebSocket or Streamable HTTP")
        .replaceAll("wss://gateway.example.com", url.replace(/^http/, "ws"))
        .replaceAll("https://gateway.example.com", url)
        .replaceAll("agent=demo", `agent=${name}`);
      expect(code, "precondition: the snippet names both transports").toMatch(/createWebSocketStream[\s\S]*createHttpStream/);
      // Inside the checkout, so its imports resolve from node_modules; untracked (test-results/).
      const dir = join(ROOT, "test-results");
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `readme-snippet-${name}.mts`);
      writeFileSync(file, code);
      const run = spawnSync(NODE, [file], { env: { ...process.env, ACP_GATEWAY_KEY: keys.client }, encoding: "utf8", timeout: 60_000 });
      expect(run.stderr).not.toMatch(/Error/);
      expect(run.stdout.match(/initialized, protocol version 1/g)).toHaveLength(2);
      expect(run.status).toBe(0);
    } finally {
      agent.close();
    }
  });
});
