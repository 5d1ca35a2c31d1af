// The gateway's REST API (/v1/…) with the signed-in credential: an API key, or a person's token from
// the tenant's provider (sent with Acp-Tenant naming the tenant). Errors become ApiError with a message
// a person can act on: a refused credential (401) and one that may not do something (403) say so; a
// person's token refused (expired, or the tenant changed its provider) also tells the app, which signs out.

import type { ApiAuditEntry, ApiFieldIssue, ApiRule } from "../../protocol/rest-api";
import type { Role } from "../../core/principal";
import type { SessionModes } from "../../protocol/people/session-modes";
import type { PersonToken, SignInInfo } from "./sign-in";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** A refused settings change's issues, by the path of the field (PATCH /v1/tenant/settings). */
    readonly issues: readonly ApiFieldIssue[] = [],
  ) {
    super(message);
  }
}

export interface Session {
  id: string;
  agent: string;
  cwd: string;
  title: string | null;
  createdBy: string | null;
  createdAt: number;
  updatedAt: number;
  /** As the session last published it to the index: one list call shows every session's state. */
  state: { turn: "idle" | "running" | "cancelling"; waiting: number };
}

/** An agent of the tenant as GET /v1/agents?status=1 shows it (`connected`: null for dial-out agents, which are not asked). */
export interface Agent {
  name: string;
  description: string | null;
  mode: "dial_in" | "dial_out";
  isDefault: boolean;
  connected?: boolean | null;
  /** The agent refused the gateway's initialize: its message (it is connected, but failing). */
  failing?: string | null;
  /** It ran a tool call without asking anyone (decision 0056): the latest such run. */
  decidesItself?: { at: number; sessionId: string; kind: string } | null;
}

export interface Snapshot {
  sessionId: string;
  agent: string;
  cwd: string;
  title: string | null;
  turn: { state: "idle" | "running" | "cancelling"; startedAt?: number; user?: string | null };
  pendingPermissions: { requestId: number; toolCallId: string | null; createdAt: number; deadlineAt: number }[];
  clients: { connectionId: string; user: string | null; attachedAt: number }[];
  /** The agent's modes, each marked governed (decision 0061); null when it advertised none. */
  modes?: SessionModes | null;
}

export interface DryRun {
  decision: "allow" | "reject" | null;
  rule: ApiRule | null;
  option: { optionId: string; name: string; kind: string } | null;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** GET /v1/audit's page also says how much of the tenant's daily audit budget is spent (decision 0022). */
export interface AuditPageBody extends Page<ApiAuditEntry> {
  budget?: { bytesPerDay: number; spentToday: number; exhausted: boolean; resetsAt: number };
}

/** What the console sends as its bearer. */
export type Credential = { type: "key"; key: string } | ({ type: "token" } & PersonToken);

export class Api {
  constructor(
    readonly credential: Credential,
    /** Told when the gateway refuses a person's token (401), with its reason. */
    private readonly onTokenRefused?: (why: string) => void,
  ) {}

  /** The headers that carry the credential. */
  get authHeaders(): Record<string, string> {
    const c = this.credential;
    return c.type === "key" ? { Authorization: `Bearer ${c.key}` } : { Authorization: `Bearer ${c.token}`, "Acp-Tenant": c.tenant };
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>("GET", path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>("POST", path, body);
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>("PATCH", path, body);
  }

  delete(path: string): Promise<void> {
    return this.call<void>("DELETE", path);
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { ...this.authHeaders };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response: Response;
    try {
      response = await fetch(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    } catch {
      throw new ApiError(0, "The gateway could not be reached. Check your connection and try again.");
    }
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: the status says enough
    }
    if (!response.ok) {
      const message = errorMessage(json) ?? response.statusText;
      if (response.status === 401 && this.credential.type === "token") this.onTokenRefused?.(message);
      throw new ApiError(response.status, explain(response.status, message, this.credential.type), issuesOf(json));
    }
    // SAFETY: the gateway's OpenAPI schemas describe these responses; the types above mirror them.
    return json as T;
  }
}

function errorMessage(json: unknown): string | undefined {
  if (typeof json !== "object" || json === null || !("error" in json)) return undefined;
  const error = (json as { error: unknown }).error;
  return typeof error === "object" && error !== null && "message" in error ? String((error as { message: unknown }).message) : undefined;
}

function issuesOf(json: unknown): ApiFieldIssue[] {
  if (typeof json !== "object" || json === null || !("error" in json)) return [];
  const error = (json as { error: unknown }).error;
  const issues = typeof error === "object" && error !== null && "issues" in error ? (error as { issues: unknown }).issues : undefined;
  return Array.isArray(issues)
    ? issues
        .filter((i): i is { path: unknown; message: unknown } => typeof i === "object" && i !== null)
        .map((i) => ({ path: String(i.path), message: String(i.message) }))
    : [];
}

function explain(status: number, message: string, credential: Credential["type"]): string {
  const what = credential === "key" ? "this key" : "your sign-in";
  if (status === 401) return `The gateway did not accept ${what}: ${message}`;
  if (status === 403) return `${credential === "key" ? "This key" : "You"} may not do that: ${message}. Ask someone with an admin key.`;
  if (status === 429) return `Too many requests with ${what}: ${message}. Wait a minute and try again.`;
  return message;
}

/** GET /v1/sign-in: how a tenant's people sign in (public: no credential). */
export async function signInInfo(tenant: string): Promise<SignInInfo> {
  let response: Response;
  try {
    response = await fetch(`/v1/sign-in?tenant=${encodeURIComponent(tenant)}`);
  } catch {
    throw new ApiError(0, "The gateway could not be reached. Check your connection and try again.");
  }
  const json: unknown = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, errorMessage(json) ?? response.statusText);
  // SAFETY: the gateway's OpenAPI schema "SignIn" describes this response.
  return json as SignInInfo;
}

/** GET /v1/me: who the credential names. */
export interface Me {
  tenant: string;
  kind: string;
  credential: "key" | "token";
  /** The key's id (a person's derived one): what the gateway marks their prompts and answers with. */
  keyId: string;
  label: string | null;
  person: { issuer: string; subject: string; name: string } | null;
  /** What the credential may do; absent from a gateway older than this console. */
  role?: Role | null;
  expiresAt: number | null;
}

export function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** Who the console is signed in as: the credential it sends, and the agent new sessions go to. */
export interface Auth {
  credential: Credential;
  agent: string;
}
