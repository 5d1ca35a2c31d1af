// Command-line arguments of acp-gateway, with the environment as a fallback for what should not
// appear in `ps` (the key).

import { type ChainPoint, START, parsePoint } from "../protocol/audit-chain.ts";

interface CommonOptions {
  url: URL;
  key: string;
}
interface ClientOptions extends CommonOptions {
  command: "client";
  agent: string | undefined;
}
interface AgentOptions extends CommonOptions {
  command: "agent";
  name: string;
  argv: string[];
  /** How much of the agent's output is kept while the socket is down. */
  buffer: { messages: number; bytes: number };
}
/** `audit verify`: check an audit export (GET /v1/audit/export) offline; no gateway needed. */
export interface AuditVerifyOptions {
  command: "audit-verify";
  /** A file, or "-" for stdin. */
  file: string;
  after: { seq: number; hash: string | undefined };
  end: ChainPoint | undefined;
}
export type Parsed = ClientOptions | AgentOptions | AuditVerifyOptions | { command: "help"; topic?: "client" | "agent" | "audit" };

export class UsageError extends Error {}

export function parseArgs(argv: string[], env: Record<string, string | undefined>): Parsed {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") return { command: "help" };
  if (command === "audit") return parseAudit(rest);
  if (command !== "client" && command !== "agent") throw new UsageError(`unknown command "${command}"; use "client", "agent" or "audit"`);
  const dashdash = rest.indexOf("--");
  const flags = dashdash >= 0 ? rest.slice(0, dashdash) : rest;
  const tail = dashdash >= 0 ? rest.slice(dashdash + 1) : [];
  const values: Record<string, string> = {};
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i] as string;
    if (flag === "--help" || flag === "-h") return { command: "help", topic: command };
    const match = /^--(url|key|agent|name|buffer-messages|buffer-bytes)(?:=(.*))?$/.exec(flag);
    if (!match) throw new UsageError(`unknown option "${flag}"`);
    const value = match[2] ?? flags[++i];
    if (value === undefined) throw new UsageError(`--${match[1]} needs a value`);
    values[match[1] as string] = value;
  }
  const url = gatewayUrl(values.url ?? env.ACP_GATEWAY_URL);
  const key = values.key ?? env.ACP_GATEWAY_KEY;
  if (!key) throw new UsageError("no key: pass --key KEY or set ACP_GATEWAY_KEY (the variable keeps it out of `ps`)");
  if (command === "client") return { command, url, key, agent: values.agent ?? env.ACP_GATEWAY_AGENT };
  const name = values.name ?? env.ACP_GATEWAY_AGENT;
  if (!name) throw new UsageError("no agent name: pass --name NAME (or set ACP_GATEWAY_AGENT)");
  if (tail.length === 0) throw new UsageError('no agent command: put it after "--", e.g. acp-gateway agent --name demo -- node agent.js');
  const buffer = {
    messages: positiveInt("--buffer-messages", values["buffer-messages"], 10_000),
    bytes: positiveInt("--buffer-bytes", values["buffer-bytes"], 16 * 1024 * 1024),
  };
  return { command, url, key, name, argv: tail, buffer };
}

function parseAudit(argv: string[]): Parsed {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === "--help" || sub === "-h") return { command: "help", topic: "audit" };
  if (sub !== "verify") throw new UsageError(`unknown audit command "${sub}"; use "audit verify FILE"`);
  let file: string | undefined;
  let after: AuditVerifyOptions["after"] = START;
  let end: ChainPoint | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] as string;
    if (arg === "--help" || arg === "-h") return { command: "help", topic: "audit" };
    const match = /^--(after|end)(?:=(.*))?$/.exec(arg);
    if (match) {
      const value = match[2] ?? rest[++i];
      if (value === undefined) throw new UsageError(`--${match[1]} needs a value: SEQ:HASH`);
      const point = parsePoint(value);
      if (match[1] === "after") {
        if (!point) throw new UsageError(`--after needs SEQ:HASH (or SEQ alone, trusting the first line's prev), not "${value}"`);
        after = point;
      } else {
        if (!point || point.hash === undefined)
          throw new UsageError(`--end needs SEQ:HASH (the export's Acp-Audit-Chain-End header), not "${value}"`);
        end = { seq: point.seq, hash: point.hash };
      }
    } else if (arg.startsWith("--")) throw new UsageError(`unknown option "${arg}"`);
    else if (file === undefined) file = arg;
    else throw new UsageError(`one file at a time: "${file}", then "${arg}"`);
  }
  if (file === undefined) throw new UsageError('no file: pass the export\'s file, or "-" to read stdin');
  return { command: "audit-verify", file, after, end };
}

function positiveInt(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} needs a whole number of at least 1, not "${raw}"`);
  return n;
}

/** The gateway's base URL as `npm start` prints it: http(s), or ws(s) taken as the same host. */
function gatewayUrl(raw: string | undefined): URL {
  if (!raw) throw new UsageError("no gateway URL: pass --url URL (e.g. http://127.0.0.1:8787) or set ACP_GATEWAY_URL");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`"${raw}" is not a URL; expected something like http://127.0.0.1:8787 or https://gateway.example.com`);
  }
  if (!["http:", "https:", "ws:", "wss:"].includes(url.protocol))
    throw new UsageError(`unsupported scheme "${url.protocol}" in ${raw}; use http(s)`);
  return url;
}

/** The WebSocket URL of a path on the gateway: http → ws, https → wss, the base path kept. */
export function webSocketUrl(base: URL, path: string, query: Record<string, string | undefined> = {}): string {
  const url = new URL(base.toString());
  url.protocol = url.protocol === "https:" || url.protocol === "wss:" ? "wss:" : "ws:";
  url.pathname = `${url.pathname.replace(/\/+$/, "")}${path}`;
  url.search = "";
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
  return url.toString();
}

export const HELP = {
  main: `acp-gateway — connect ACP editors and agents to a hosted ACP gateway

Usage:
  acp-gateway client --url URL [--agent NAME]           be a stdio ACP agent for an editor (Zed, any ACP client)
  acp-gateway agent  --url URL --name NAME -- CMD ARGS  connect a stdio ACP agent to the gateway as a cloud agent
  acp-gateway audit verify [--after SEQ:HASH] [--end SEQ:HASH] FILE|-   check an audit export's hash chain

The key comes from ACP_GATEWAY_KEY (or --key KEY, which shows in \`ps\`); the URL from --url or
ACP_GATEWAY_URL: the gateway's base URL as \`npm start\` prints it (http://127.0.0.1:8787) or https://….
Logs go to stderr; stdout carries only ACP. Exit codes: 0 done, 1 unreachable or failed, 2 refused
key or bad arguments.

Run \`acp-gateway client --help\`, \`acp-gateway agent --help\` or \`acp-gateway audit --help\` for details.`,
  audit: `acp-gateway audit verify — check an audit export (GET /v1/audit/export) offline

Usage: acp-gateway audit verify [--after SEQ:HASH] [--end SEQ:HASH] FILE|-

Reads the NDJSON export (a file, or stdin for -), recomputes each line's hash (SHA-256 of the line
without its "hash" key in RFC 8785 canonical JSON, decision 0024) and checks that seq runs on with
no gap and each prev is the hash of the line before. The first fault is printed with its line
number: a gap, a reorder, an edited line, a broken link, a line of another tenant, or a wrong start
or end. Exit codes: 0 the chain holds, 1 it does not, 2 bad arguments or an unreadable file.

--after SEQ:HASH  the export starts after this link (the last one you verified; default 0: the
                  whole chain, starting at seq 1 after 64 zeros). SEQ alone trusts the first prev.
--end SEQ:HASH    the export must end at this link: the Acp-Audit-Chain-End header of the export's
                  response. Without it, lines cut off at the end cannot be noticed.
On success it prints the last link, SEQ:HASH: keep it for the next export's --after.`,
  client: `acp-gateway client — a stdio ACP agent process, as far as the editor can tell

Usage: ACP_GATEWAY_KEY=KEY acp-gateway client --url URL [--agent NAME]

Relays newline-delimited JSON-RPC between stdin/stdout and the gateway's /acp WebSocket
(wss:// for https URLs). --agent (or ACP_GATEWAY_AGENT) names the gateway agent; without it the
tenant's default agent is used. A client key is needed.

When the connection drops it reconnects with backoff (up to 10 s between attempts) and resumes each
session's stream where it left off (stream/resume with the last cursor seen): the gateway sends only
what the editor missed, the permission requests still waiting, and the answers to the editor's
session requests that were in flight, which wait for them. A session the gateway can no longer
resume (it restarted, or more than 30 s passed) is re-attached with session/load: the gateway
replays it and the bridge skips what the editor already has; requests in flight on it, and the
connection's own (initialize, session/new, session/list…), are answered with an error (-32603).
Permission dialogs of the old connection are withdrawn with $/cancel_request (they come again).
A refused key (HTTP 401/403, or close code 4401) ends the bridge with exit code 2.`,
  agent: `acp-gateway agent — connect any stdio ACP agent to the gateway as a dial-in cloud agent

Usage: ACP_GATEWAY_KEY=KEY acp-gateway agent --url URL --name NAME -- CMD ARGS...

Starts CMD ARGS, relays its stdin/stdout (newline-delimited JSON-RPC) to the gateway's
/agents/NAME/connect WebSocket, and keeps both alive: the agent process is restarted with backoff
if it exits (the socket is reopened so the gateway initializes the new process), and the socket is
reconnected with backoff when it drops (the agent process keeps its sessions; the gateway's new
initialize is answered from the process's first answer). An agent key is needed.
Another connection under the same name takes over (close code 4000): the bridge then exits 1.

While the socket is down, the agent's notifications are kept (at most --buffer-messages, default
10000, and --buffer-bytes, default 16 MiB; the oldest go first) and sent after reconnecting, with an
_acp_gateway_agent/output_dropped notice for each session that lost some. The agent's requests are
answered at once, since the clients that could answer them were on the old connection: a
session/request_permission as cancelled, anything else with an error; the same for those still open
when the socket drops. Its answers to the old connection's requests are dropped.`,
};
