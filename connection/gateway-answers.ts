// What the edge does itself with a client's request instead of relaying it: initialize (with the
// AgentObject's status), session/new and session/load through the agent, session/resume, close,
// list (from D1), attach and detach, and a mode change four eyes holds, handed to its session
// wrapped. The sessions' sockets are connection/session-sockets.ts; ClientConnection dispatches here.

import type { Env } from "../core/env";
import type { Principal } from "../core/principal";
import { ErrorCode } from "../core/rpc-errors";
import { liveSessionCount, recentSessionsOfAgent } from "../db/queries/sessions";
import { gatewayPermissionDeadlineMs } from "../protocol/effective-settings";
import { clientCapsOf, initializeResult } from "../protocol/initialize-answer";
import { type JsonRpcId, type Message, type ResponseMessage, RpcError, isObject, resultResponse, sessionIdOf } from "../protocol/jsonrpc";
import { AGENT_METHODS } from "../protocol/methods";
import { HOLD_MODE_CHANGE } from "../protocol/people/mode-approval";
import { withModesMarked } from "../protocol/people/session-modes";
import { ATTACH_METHODS, attachNotFound, detachResult, readAttach } from "../protocol/session-attach";
import type { TransportCapability } from "../protocol/stream-cursor";
import { LIVE_SESSION_WINDOW_MS, limitsOf, liveSessionsError } from "../protocol/tenant-limits";
import type { AgentStatus, GatewayObjects, OpenSessionArgs } from "./gateway-objects";
import type { SessionSockets } from "./session-sockets";

/** The connection as these answers see it: who it is, for which agent, and where the answers go. */
interface AnsweringConnection {
  env: Env;
  objects: GatewayObjects;
  principal: Principal;
  agent: string;
  sockets: SessionSockets;
  /** What the client's transport offers of resumable streams, advertised in initialize (client-sink.ts). */
  transport(): TransportCapability | undefined;
  reply(message: object): void;
}

export class GatewayAnswers {
  constructor(private readonly c: AnsweringConnection) {}

  /** Answers the request when its method is the gateway's own; false when it is not (it is relayed to its session). */
  async answer(id: JsonRpcId, method: string, params: unknown): Promise<boolean> {
    switch (method) {
      case AGENT_METHODS.initialize:
        this.c.reply(resultResponse(id, await this.initialize(params)));
        return true;
      case AGENT_METHODS.authenticate:
        // The gateway authenticated this connection by its API key already.
        this.c.reply(resultResponse(id, {}));
        return true;
      case AGENT_METHODS.sessionNew:
        await this.openSession(id, AGENT_METHODS.sessionNew, params);
        return true;
      case AGENT_METHODS.sessionLoad:
        await this.loadSession(id, params);
        return true;
      case AGENT_METHODS.sessionResume:
        await this.resumeSession(id, params);
        return true;
      case AGENT_METHODS.sessionList:
        this.c.reply(resultResponse(id, await this.listSessions(params)));
        return true;
      case AGENT_METHODS.sessionClose:
        await this.closeSession(id, params);
        return true;
      case ATTACH_METHODS.attach:
        await this.attach(id, params);
        return true;
      case ATTACH_METHODS.detach:
        await this.detach(id, params);
        return true;
    }
    return false;
  }

  private async initialize(params: unknown): Promise<Record<string, unknown>> {
    const { principal, agent, sockets } = this.c;
    sockets.caps = clientCapsOf(params);
    const status = await this.agentStatus();
    return initializeResult(params, status, { principal, agent, connectionId: sockets.connId, transport: this.c.transport() });
  }

  private async openSession(id: JsonRpcId, method: typeof AGENT_METHODS.sessionNew, params: unknown): Promise<void> {
    await this.checkLiveSessions();
    const answer = await this.openThroughAgent(method, params);
    if (answer.error !== undefined || !isObject(answer.result) || typeof answer.result.sessionId !== "string") {
      return this.c.reply({ ...answer, id });
    }
    const sessionId = answer.result.sessionId;
    // Register the attach before answering, so a prompt sent right after the answer waits for it.
    const attached = this.c.sockets.attach(sessionId, "replay");
    // Which of the agent's modes are governed, for this session (decision 0061).
    this.c.reply({ ...answer, result: withModesMarked(answer.result), id });
    await attached.catch(() => undefined);
  }

  private async loadSession(id: JsonRpcId, params: unknown): Promise<void> {
    const sessionId = sessionIdParam("session/load", params);
    if (!(await this.c.sockets.indexed(sessionId))) {
      const status = await this.agentStatus();
      if (status.info?.agentCapabilities.loadSession !== true) throw RpcError.sessionNotFound(sessionId);
      const answer = await this.openThroughAgent(AGENT_METHODS.sessionLoad, params);
      if (answer.error !== undefined) return this.c.reply({ ...answer, id });
    }
    await this.c.sockets.reattach(sessionId, "load", id);
  }

  /**
   * `session/attach` (the draft RFD, PR #533; decision 0054): beside session/load, for a live session
   * of this tenant. The role asked is checked against the key's (readAttach: never raised); the session
   * replays what `historyPolicy` says, answers, re-sends what waits unless `none`, then streams live —
   * in one step of its own. A second attach replaces the first, as a second load does.
   */
  private async attach(id: JsonRpcId, params: unknown): Promise<void> {
    const ask = readAttach(params, this.c.principal.role, () => crypto.randomUUID());
    if (!(await this.c.sockets.indexed(ask.sessionId))) throw attachNotFound(ask.sessionId);
    await this.c.sockets.reattach(ask.sessionId, "attach", id, ask).catch((error: unknown) => {
      throw error instanceof RpcError && error.code === ErrorCode.limitExceeded ? error : attachNotFound(ask.sessionId);
    });
  }

  /** `session/detach`: this client stops receiving the session; the session and its other clients go on. */
  private async detach(id: JsonRpcId, params: unknown): Promise<void> {
    const sessionId = sessionIdParam(ATTACH_METHODS.detach, params);
    const { sockets } = this.c;
    if (!sockets.has(sessionId) && !(await sockets.indexed(sessionId))) throw attachNotFound(sessionId);
    await sockets.detach(sessionId);
    this.c.reply(resultResponse(id, detachResult(sessionId)));
  }

  private async resumeSession(id: JsonRpcId, params: unknown): Promise<void> {
    const sessionId = sessionIdParam("session/resume", params);
    const { sockets } = this.c;
    if (!(await sockets.indexed(sessionId))) throw RpcError.sessionNotFound(sessionId);
    if (!sockets.has(sessionId)) await sockets.attach(sessionId, "live");
    this.c.reply(resultResponse(id, {}));
  }

  /** session/close: this client leaves the session; the session, and the agent's, live on for the others. */
  private async closeSession(id: JsonRpcId, params: unknown): Promise<void> {
    const sessionId = sessionIdParam("session/close", params);
    const { sockets } = this.c;
    if (!sockets.has(sessionId) && !(await sockets.indexed(sessionId))) throw RpcError.sessionNotFound(sessionId);
    void sockets.leave(sessionId);
    this.c.reply(resultResponse(id, {}));
  }

  private async listSessions(params: unknown): Promise<Record<string, unknown>> {
    const cwd = isObject(params) && typeof params.cwd === "string" ? params.cwd : null;
    const cursor = isObject(params) && typeof params.cursor === "string" ? Number(params.cursor) : Number.MAX_SAFE_INTEGER;
    const limit = 100;
    const rows = await recentSessionsOfAgent(this.c.env.DB, {
      tenantId: this.c.principal.tenantId,
      agent: this.c.agent,
      cwd,
      updatedBefore: Number.isFinite(cursor) ? cursor : Number.MAX_SAFE_INTEGER,
      limit,
    });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      sessions: page.map((r) => ({
        sessionId: r.sessionId,
        cwd: r.cwd,
        ...(r.title ? { title: r.title } : {}),
        updatedAt: new Date(r.updatedAt).toISOString(),
      })),
      ...(rows.length > limit && last ? { nextCursor: String(last.updatedAt) } : {}),
    };
  }

  /** Four eyes holds this change (decision 0061): the session keeps it, wrapped, until a second person decides. */
  async holdModeChange(id: JsonRpcId, message: Message): Promise<void> {
    const sessionId = sessionIdOf(message);
    if (sessionId === undefined) throw RpcError.invalidParams("params.sessionId must be a string");
    const session = await this.c.sockets.session(sessionId);
    // It waits as long as the agent's permission requests do.
    const deadlineMs = permissionDeadlineMs(this.c.env, this.c.principal);
    session.send(JSON.stringify({ jsonrpc: "2.0", id, method: HOLD_MODE_CHANGE, params: { sessionId, request: message, deadlineMs } }));
  }

  private agentStub() {
    return this.c.objects.agent(this.c.principal.tenantId, this.c.agent);
  }

  private async agentStatus(): Promise<AgentStatus> {
    // SAFETY: RPC types turn `unknown` fields into `never`; the value is the AgentStatus the object returned.
    return (await this.agentStub().status(this.c.principal.tenantId, this.c.agent)) as unknown as AgentStatus;
  }

  /** session/new, or session/load of a session the gateway does not know, asked of the agent for this client. */
  private async openThroughAgent(method: OpenSessionArgs["method"], params: unknown): Promise<ResponseMessage> {
    const { env, principal } = this.c;
    const args: OpenSessionArgs = {
      tenantId: principal.tenantId,
      agent: this.c.agent,
      method,
      params,
      createdBy: principal.label,
      deadlineMs: permissionDeadlineMs(env, principal),
      relayAlwaysAsMade: principal.settings.relayAlwaysAsMade === true,
      limits: principal.settings.limits,
    };
    // SAFETY: as above; openSession returns a JSON-RPC response object.
    return (await this.agentStub().openSession(args)) as unknown as ResponseMessage;
  }

  /** session/new beyond the tenant's live sessions is refused before the agent is asked (unknown count: allowed). */
  private async checkLiveSessions(): Promise<void> {
    const limit = limitsOf(this.c.principal.settings.limits).liveSessionsPerTenant;
    const since = Date.now() - LIVE_SESSION_WINDOW_MS;
    const live = await liveSessionCount(this.c.env.DB, this.c.principal.tenantId, since).catch(() => 0);
    if (live >= limit) {
      const error = liveSessionsError(limit);
      throw new RpcError(error.code, error.message, error.data);
    }
  }
}

/** A request that is neither the gateway's own nor names a session to relay it to. */
export function notRoutable(method: string, params: unknown): RpcError {
  if (isObject(params) && "sessionId" in params) return RpcError.invalidParams("params.sessionId must be a string");
  return new RpcError(
    ErrorCode.methodNotFound,
    `Method not found: ${method}. The gateway routes requests by params.sessionId, and answers initialize, authenticate, session/new, session/load, session/resume and session/list itself.`,
    { method },
  );
}

/** The `params.sessionId` a session method needs, or the invalid-params error that says so. */
function sessionIdParam(method: string, params: unknown): string {
  const sessionId = isObject(params) ? params.sessionId : undefined;
  if (typeof sessionId !== "string") throw RpcError.invalidParams(`${method} needs params.sessionId (a string)`);
  return sessionId;
}

/** How long a permission request of the session waits for an answer: the tenant's setting, else PERMISSION_DEADLINE_MS, else 10 min. */
function permissionDeadlineMs(env: Env, principal: Principal): number {
  const fromTenant = principal.settings.permissionDeadlineMs;
  if (typeof fromTenant === "number" && fromTenant > 0) return fromTenant;
  return gatewayPermissionDeadlineMs(env.PERMISSION_DEADLINE_MS);
}
