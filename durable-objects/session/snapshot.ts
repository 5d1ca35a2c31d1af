// What the REST API shows of a live session (GET /v1/sessions/:id): its turn, tool calls, the
// permission requests waiting and the clients attached, read from the session's own storage; and
// the requests waiting on one person (GET /v1/approvals?waiting=me).

import type { AttachedClients } from "./clients";
import type { SessionSnapshot, WaitingRequest } from "./contract";
import type { PendingRequest, SessionMeta, SessionStore } from "./store";
import { operationView } from "../../protocol/operation-view";
import { toolCallOf } from "../../protocol/pending-permission";
import { sessionModesOf } from "../../protocol/people/session-modes";

export function sessionSnapshot(meta: SessionMeta, store: SessionStore, clients: AttachedClients): SessionSnapshot {
  const turn = store.turn;
  return {
    sessionId: meta.sessionId,
    agent: meta.agent,
    cwd: meta.cwd,
    title: meta.title ?? null,
    createdAt: meta.createdAt,
    turn: turn.state === "idle" ? { state: "idle" } : { state: turn.state, startedAt: turn.startedAt, user: turn.user },
    toolCalls: store.toolCalls(),
    pendingPermissions: store.pending().map((p) => ({
      requestId: p.permId,
      toolCallId: p.toolCallId,
      toolCall: p.toolCall,
      options: p.options,
      createdAt: p.createdAt,
      deadlineAt: p.deadlineAt,
    })),
    clients: clients.list().map((c) => ({ connectionId: c.connId, user: c.user, attachedAt: c.attachedAt })),
    lastSeq: store.lastSeq(),
    ...(store.hold ? { held: store.hold } : {}),
    // The agent's modes as advertised and reported, each marked governed as the edge judges it (decision 0061).
    modes: sessionModesOf(meta.result),
  };
}

/** The requests waiting on a person, as "waiting on you" lists them (the SessionObject's `waitingOn`). */
export function waitingRequests(meta: SessionMeta, pending: readonly PendingRequest[]): WaitingRequest[] {
  return pending.map((p) => ({
    requestId: p.permId,
    toolCallId: p.toolCallId,
    operation: operationView(toolCallOf(p), meta.cwd),
    askedAt: p.createdAt,
    deadlineAt: p.deadlineAt,
  }));
}
