// Dialling out to a remote agent: an agent registered as `dial_out` with the URL of its ACP
// WebSocket endpoint (the remote transport's `/acp`) and headers to send. The connection is opened
// when a client asks for the agent; failed attempts back off exponentially (0.5 s doubling, capped
// at 30 s) and, until the next attempt is due, callers get the last error at once.

import { agentByName } from "../../db/queries/agents";
import type { Env } from "../../core/env";
import type { AgentMeta } from "./store";

const BASE_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

interface DialOutRegistration {
  url: string;
  headers: Record<string, string>;
}

export class Dialer {
  lastError: string | undefined;
  private failures = 0;
  private nextAttemptAt = 0;

  /** Opens the connection and hands it to `onOpen`; undefined when the agent is not dial_out or unreachable. */
  async connect(env: Env, meta: AgentMeta, hooks: { onOpen(ws: WebSocket): Promise<void> }): Promise<WebSocket | undefined> {
    const registration = await dialOutRegistration(env, meta);
    if (!registration) return undefined;
    if (Date.now() < this.nextAttemptAt) return undefined;
    try {
      const response = await fetch(httpUrl(registration.url), { headers: { ...registration.headers, Upgrade: "websocket" } });
      const ws = response.webSocket;
      if (!ws) throw new Error(`it answered HTTP ${response.status} instead of a WebSocket upgrade`);
      ws.accept();
      await hooks.onOpen(ws);
      this.failures = 0;
      this.lastError = undefined;
      return ws;
    } catch (error) {
      this.failures += 1;
      const wait = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** (this.failures - 1));
      this.nextAttemptAt = Date.now() + wait;
      const reason = error instanceof Error ? error.message : String(error);
      this.lastError = `dialling ${registration.url} failed: ${reason} (next attempt in ${Math.ceil(wait / 1000)} s)`;
      return undefined;
    }
  }
}

async function dialOutRegistration(env: Env, meta: AgentMeta): Promise<DialOutRegistration | undefined> {
  const row = await agentByName(env.DB, meta.tenantId, meta.name);
  if (!row || row.mode !== "dial_out" || !row.url) return undefined;
  let headers: Record<string, string>;
  try {
    headers = row.headers ? (JSON.parse(row.headers) as Record<string, string>) : {};
  } catch {
    headers = {}; // a row the API wrote cannot be unparseable; if it is, dial without headers
  }
  return { url: row.url, headers };
}

/** fetch() upgrades over http(s); a registered ws(s) URL is the same endpoint. */
function httpUrl(url: string): string {
  return url.replace(/^ws(s?):\/\//i, "http$1://");
}
