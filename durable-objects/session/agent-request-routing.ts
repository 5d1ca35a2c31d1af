// Where an agent's request other than a permission request may go: fs/*, terminal/*, elicitation/*
// and extensions act on a person's machine or ask a person something, so they go only to the client
// whose prompt is running (the turn's connection), and only if that client said in initialize that it
// can serve them. Watching clients never receive them; nothing falls back to "any attached client".

import { type JsonRpcId, RpcError, errorResponse, isObject } from "../../protocol/jsonrpc";
import { CANCEL_REQUEST, CLIENT_METHODS, isExtension } from "../../protocol/methods";
import type { ToAgent } from "../agent/contract";
import { type AttachedClients, attachmentOf, sendRewritable } from "./clients";
import type { ClientAttachment } from "../../protocol/session-wire";
import type { SessionStore } from "./store";
import type { RequestRows } from "./request-rows";
import type { TurnState } from "../../protocol/turn-state";
import { ErrorCode } from "../../core/rpc-errors";

/** The agent's requests a session routed to one client, until that client answers or goes. */
export class AgentRequests {
  constructor(
    private readonly store: SessionStore,
    private readonly requests: RequestRows,
    private readonly clients: AttachedClients,
    private readonly toAgent: (frame: ToAgent) => void,
  ) {}

  /** fs/*, terminal/*, elicitation/* and extension requests: only to the client whose prompt is running. */
  route(epoch: number, agentReqId: JsonRpcId, method: string, params: unknown): void {
    const turn = this.store.turn;
    const ws = turn.state !== "idle" ? this.clients.byConnection(turn.connId) : undefined;
    const target = agentRequestTarget(turn, this.store.meta?.sessionId ?? "", method, params, ws ? attachmentOf(ws) : undefined);
    if (!ws || !target.ok) {
      const error = target.ok ? new RpcError(ErrorCode.internalError, `The client serving ${method} is gone`) : target.error;
      this.toAgent({ type: "response", epoch, id: agentReqId, error: errorResponse(agentReqId, error).error });
      return;
    }
    const outId = this.store.nextId();
    this.requests.addAgentRequest({ outId, agentReqId, agentEpoch: epoch, connId: target.connId, method });
    sendRewritable(ws, JSON.stringify({ jsonrpc: "2.0", id: outId, method, params }));
  }

  /** The client answered: the answer goes to the agent under the agent's own id. */
  answered(outId: number, response: { result?: unknown; error?: unknown }): void {
    const forwarded = this.requests.takeAgentRequest(outId);
    if (!forwarded) return;
    this.toAgent({
      type: "response",
      epoch: forwarded.agentEpoch,
      id: forwarded.agentReqId,
      result: response.result,
      error: response.error,
    });
  }

  /** Requests that only this client could serve are answered with an error: nobody else has them. */
  clientGone(connId: string): void {
    for (const r of this.requests.agentRequests({ connId })) {
      this.requests.takeAgentRequest(r.outId);
      const error = { code: ErrorCode.internalError, message: `The client serving ${r.method} disconnected` };
      this.toAgent({ type: "response", epoch: r.agentEpoch, id: r.agentReqId, error });
    }
  }

  /** The agent withdrew one: the client's copy is withdrawn. */
  withdrawnByAgent(epoch: number, requestId: JsonRpcId): void {
    for (const r of this.requests.agentRequests({ agentReqId: requestId, epoch })) {
      const ws = this.clients.byConnection(r.connId);
      if (ws) sendRewritable(ws, JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: r.outId } }));
    }
  }
}

/** The client that may serve the request, or the error the agent gets at once. */
type AgentRequestTarget = { ok: true; connId: string } | { ok: false; error: RpcError };

function agentRequestTarget(
  turn: TurnState,
  sessionId: string,
  method: string,
  params: unknown,
  turnClient: ClientAttachment | undefined,
): AgentRequestTarget {
  const refuse = (why: string, reason: string) =>
    ({
      ok: false,
      error: new RpcError(
        ErrorCode.methodNotFound,
        `${method} was not delivered: ${why}. The gateway sends an agent's fs, terminal, elicitation and extension requests only to the client whose prompt is running, and only if it advertised the capability.`,
        { method, sessionId, reason },
      ),
    }) as const;
  if (turn.state === "idle") return refuse(`no turn is running in session ${sessionId}`, "no_turn");
  if (!turnClient || turnClient.connId !== turn.connId) {
    return refuse("the client whose prompt is running is no longer attached", "prompting_client_gone");
  }
  const needed = capabilityNeeded(method, params);
  if (needed !== null && !hasCapability(turnClient.caps, needed)) {
    return refuse(`the client whose prompt is running did not advertise clientCapabilities.${needed} in initialize`, "capability_missing");
  }
  if (needed === null && !isExtension(method)) {
    return refuse(`the gateway does not route ${method} to clients`, "unknown_method");
  }
  return { ok: true, connId: turnClient.connId };
}

type Capability =
  "fs.readTextFile" | "fs.writeTextFile" | "terminal" | "elicitation.form" | "elicitation.url" | "elicitation.(unknown mode)";

/** The capability a method needs; null for extensions (the prompting client alone gets them) and unknown methods. */
function capabilityNeeded(method: string, params: unknown): Capability | null {
  if (method === CLIENT_METHODS.fsReadTextFile) return "fs.readTextFile";
  if (method === CLIENT_METHODS.fsWriteTextFile) return "fs.writeTextFile";
  if (method.startsWith("terminal/")) return "terminal";
  if (method.startsWith("elicitation/")) {
    // A mode the gateway does not know cannot have been advertised in a way it understands: refused.
    const mode = isObject(params) ? params.mode : undefined;
    return mode === "form" ? "elicitation.form" : mode === "url" ? "elicitation.url" : "elicitation.(unknown mode)";
  }
  return null;
}

function hasCapability(caps: ClientAttachment["caps"], needed: Capability): boolean {
  switch (needed) {
    case "fs.readTextFile":
      return caps.readTextFile;
    case "fs.writeTextFile":
      return caps.writeTextFile;
    case "terminal":
      return caps.terminal;
    case "elicitation.form":
      return caps.elicitationForm === true;
    case "elicitation.url":
      return caps.elicitationUrl === true;
    case "elicitation.(unknown mode)":
      return false;
  }
}
