// Child processes for the CLI tests: the acp-gateway command run as a user runs it (Node 22, the
// key in the environment), with stdio wired to an SDK peer, and always killed at the end.

import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { ndJsonStream } from "@agentclientprotocol/sdk";
import { ROOT } from "../../scripts/local-gateway";

export const NODE = process.execPath;
const CLI = join(ROOT, "cli", "acp-gateway.ts");
export const EXAMPLE_AGENT = join(ROOT, "node_modules", "acp-sdk-v1", "dist", "examples", "agent.js");

const running = new Set<ChildProcessWithoutNullStreams>();

export function startCli(args: string[], env: Record<string, string>): ChildProcessWithoutNullStreams & { log: string[] } {
  const child = spawn(NODE, [CLI, ...args], { env: { ...process.env, ...env } }) as ChildProcessWithoutNullStreams & { log: string[] };
  child.log = [];
  child.stderr.on("data", (d: Buffer) => child.log.push(d.toString()));
  running.add(child);
  child.on("exit", () => running.delete(child));
  return child;
}

/** An ACP stream over a child's stdio: what an editor does with the agent process it launched. */
export function stdioStream(child: ChildProcessWithoutNullStreams) {
  return ndJsonStream(
    Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
  );
}

export function exitOf(child: ChildProcessWithoutNullStreams, timeoutMs = 15_000): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the process did not exit in time")), timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

export function killAll(): void {
  for (const child of running) child.kill("SIGKILL");
}
