// session/new and session/load through the agent, for the Worker's RPC (`AgentObject.openSession`):
// the request is sent on the agent's line and awaited in memory (only while the RPC is in flight);
// on success the SessionObject is set up and the session indexed. A loaded session is set up before
// the agent replays its history into it; an id the gateway refuses leaves everything unchanged.

import { indexSession, sessionOwner } from "../../db/queries/sessions";
import type { Env } from "../../core/env";
import { ErrorCode } from "../../core/rpc-errors";
import type { OpenSessionArgs } from "../../connection/gateway-objects";
import type { AgentRates } from "../../connection/tenant-limits";
import { RpcError, errorResponse, isObject, type ResponseMessage } from "../../protocol/jsonrpc";
import { AGENT_METHODS } from "../../protocol/methods";
import { advertisesPromptQueueing } from "../../protocol/prompt-queueing";
import { type AgentLine, type AgentRelay, agentFailingError } from "../../protocol/agent-relay";
import type { SessionStub } from "../objects";
import type { Pending } from "../pending";
import type { AgentStore } from "./store";

/** How long session/new or session/load may take before the client is told the agent did not answer. */
export const OPEN_TIMEOUT_MS = 60_000;

/** What opening a session needs of the object. */
export interface OpeningParts {
  env: Env;
  store: AgentStore;
  rates: AgentRates;
  relay: AgentRelay;
  /** The opens awaited, by the agent's request id (the relay's `waits.opened` answers them). */
  waiters: Pending<number, null, ResponseMessage>;
  /** The agent's connection, dialled now for a dial_out agent. */
  ensureLine(): Promise<AgentLine | undefined>;
  /** Resolves once the current connection answered initialize (or the wait timed out). */
  waitForInitialize(): Promise<void>;
  notConnected(agent: string): RpcError;
  session(sessionId: string): SessionStub;
}

export class SessionOpening {
  constructor(private readonly parts: OpeningParts) {}

  /** session/new or session/load through the agent; on success the SessionObject is set up and indexed. */
  async open(args: OpenSessionArgs): Promise<ResponseMessage> {
    const { store, rates, relay, waiters } = this.parts;
    store.meta ??= { tenantId: args.tenantId, name: args.agent };
    rates.overrides = args.limits;
    const line = await this.parts.ensureLine();
    if (!line) return errorResponse(0, this.parts.notConnected(args.agent));
    await this.parts.waitForInitialize();
    const failing = relay.failing;
    if (failing) return errorResponse(0, agentFailingError(args.agent, failing));
    const { agentId, epoch } = relay.opening();
    const loadId = args.method === AGENT_METHODS.sessionLoad ? sessionIdOfParams(args.params) : undefined;
    // A loaded session must exist before the agent replays its history into it.
    if (loadId) {
      const refused = await this.setUp(args, loadId, epoch, undefined);
      if (refused) {
        relay.openAbandoned(agentId);
        return errorResponse(agentId, refused);
      }
    }
    const response = new Promise<ResponseMessage>((resolve) =>
      waiters.add(agentId, null, (outcome) => {
        if (outcome.kind === "answered") return resolve(outcome.value);
        if (outcome.kind === "closed") {
          return resolve(errorResponse(agentId, RpcError.internal(`The agent disconnected (${outcome.reason}) before answering`)));
        }
        relay.openAbandoned(agentId);
        const late = `The agent "${args.agent}" did not answer ${args.method} within ${OPEN_TIMEOUT_MS / 1000} s`;
        resolve(errorResponse(agentId, RpcError.internal(late)));
      }),
    );
    line.send(JSON.stringify(withParams({ jsonrpc: "2.0", id: agentId, method: args.method }, args.params)));
    const answer = await response;
    if (answer.error !== undefined || !isObject(answer.result)) return answer;
    const sessionId = loadId ?? answer.result.sessionId;
    if (typeof sessionId !== "string" || sessionId === "") {
      return errorResponse(agentId, RpcError.internal(`The agent answered ${args.method} without a sessionId`));
    }
    const refused = await this.setUp(args, sessionId, epoch, answer.result);
    return refused ? errorResponse(agentId, refused) : answer;
  }

  /** Sets up and indexes the session, or says why the agent may not claim it (then nothing changed). */
  private async setUp(
    args: OpenSessionArgs,
    sessionId: string,
    epoch: number,
    result: Record<string, unknown> | undefined,
  ): Promise<RpcError | undefined> {
    const { env } = this.parts;
    const cwd = isObject(args.params) && typeof args.params.cwd === "string" ? args.params.cwd : "";
    const opening = args.method === AGENT_METHODS.sessionNew ? "new" : "load";
    const owner = await sessionOwner(env.DB, args.tenantId, sessionId);
    const claimed =
      owner !== undefined && (opening === "new" || owner !== args.agent)
        ? { ok: false as const, message: `session ${sessionId} already exists and belongs to agent "${owner}"` }
        : await this.parts.session(sessionId).init(
            {
              agent: args.agent,
              cwd,
              createdBy: args.createdBy,
              deadlineMs: args.deadlineMs,
              relayAlwaysAsMade: args.relayAlwaysAsMade,
              // As the connection that opens it initialized: a reconnected agent loads the session again (decision 0067).
              promptQueueing: advertisesPromptQueueing(this.parts.store.info?.agentCapabilities),
              ...(args.limits ? { limits: args.limits } : {}),
              ...(result ? { result } : {}),
            },
            opening,
          );
    if (!claimed.ok) {
      return new RpcError(
        ErrorCode.internalError,
        `The agent "${args.agent}" answered ${args.method} with a session id the gateway refused: ${claimed.message}. That session is unchanged; try again, and if this repeats the agent is misbehaving.`,
        { reason: "session_id_taken", sessionId },
      );
    }
    this.parts.relay.sessionOpened(sessionId, epoch);
    // The index row of an existing session is only touched for its own agent (never re-assigned).
    await indexSession(env.DB, { tenantId: args.tenantId, sessionId, agent: args.agent, cwd, createdBy: args.createdBy });
    return undefined;
  }
}

function withParams(message: Record<string, unknown>, params: unknown): Record<string, unknown> {
  if (params !== undefined) message.params = params;
  return message;
}

function sessionIdOfParams(params: unknown): string | undefined {
  return isObject(params) && typeof params.sessionId === "string" ? params.sessionId : undefined;
}
