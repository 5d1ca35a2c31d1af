// What the session records of itself as traffic passes: its title (also in the D1 index), current
// mode and configuration options (part of the session/load answer), the prompt echoed to the other
// clients, and the gateway's notices. Kept in the session's meta and log (store.ts).

import { touchSession } from "../../db/queries/sessions";
import { isObject } from "../../protocol/jsonrpc";
import { CLIENT_METHODS } from "../../protocol/methods";
import { titleFromPrompt } from "../../protocol/session-title";
import type { Env } from "../../core/env";
import type { AttachedClients } from "./clients";
import type { SessionMeta, SessionStore } from "./store";
import { sessionLog } from "./session-log";
import {
  type HistoryPolicy,
  MAX_HISTORY_PROMPTS,
  type TurnEnd,
  attachResult,
  peerView,
  promptReceivedUpdate,
  turnCompleteUpdate,
} from "../../protocol/session-attach";
import { lastAgentMessageId } from "./message-ids";
import { promptsInLog } from "./prompt-history";
import type { AttachRequest, ClientAttachment } from "../../protocol/session-wire";
import { type StreamTurnState, turnStateMeta } from "../../protocol/turn-state";
import { attachmentOf } from "./clients";
import { withModesMarked } from "../../protocol/people/session-modes";

/** The agent's session/new or session/load result, answered again on session/load (without its sessionId). */
export function loadResult(meta: SessionMeta): Record<string, unknown> {
  const { sessionId: _omit, ...rest } = meta.result ?? {};
  return withModesMarked(rest); // which of the agent's modes are governed (decision 0061)
}

/**
 * The answer to `session/attach` (decision 0054): the clients attached besides this one, the requests
 * waiting on people (re-sent right after it unless `none`), and the turn's state as a resumed stream
 * gets it (`_meta["acp/turnState"]`), so a `pending_only` client knows where the turn is.
 */
export function attachAnswer(
  attach: AttachRequest,
  ws: WebSocket,
  clients: AttachedClients,
  store: SessionStore,
  turn: StreamTurnState | undefined,
  served: { policy: HistoryPolicy; afterSeq: number },
  sql: SqlStorage,
): Record<string, unknown> {
  const as = attach.client.attachedAs;
  const asked = attach.attach;
  if (!as || !asked) return {};
  const live = clients
    .all()
    .filter((o) => o !== ws)
    .map(attachmentOf)
    .filter((c): c is ClientAttachment => c !== undefined && c.connId !== attach.client.connId);
  // A client whose socket dropped and may still resume is connected yet: it is announced gone when its window lapses (decision 0063).
  const away = clients.retained.clients().filter((c) => c.connId !== attach.client.connId && !live.some((l) => l.connId === c.connId));
  const others = [...live, ...away].map(peerView);
  const replayed = served.policy === "full" || served.policy === "after_message";
  return attachResult({
    sessionId: attach.sessionId,
    as,
    role: asked.role,
    historyPolicy: served.policy,
    others,
    // The PR's prompt items: those the replay just carried (decision 0063).
    ...(replayed ? { prompts: promptsInLog(sql, served.afterSeq, MAX_HISTORY_PROMPTS) } : {}),
    pending: store.pending().filter((p) => p.asking),
    meta: turnStateMeta(turn),
  });
}

export class SessionInfo {
  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly store: SessionStore,
    private readonly clients: AttachedClients,
  ) {}

  /**
   * Other clients see what was asked: the prompt is logged and fanned out as user_message_chunk updates,
   * marked with who asked: the connection, the key's label, and the key id (a person's is derived from
   * their identity, core/principal.ts), by which a console tells its own person's prompts on replay.
   */
  recordPrompt(from: ClientAttachment, params: unknown): void {
    const { connId, user, keyId } = from;
    const meta = this.store.meta;
    const blocks = isObject(params) && Array.isArray(params.prompt) ? params.prompt : [];
    // One time for the prompt's rows: its history item is its rows at one time (prompt-history.ts).
    const at = Date.now();
    for (const content of blocks) {
      const text = JSON.stringify({
        jsonrpc: "2.0",
        method: CLIENT_METHODS.sessionUpdate,
        params: {
          sessionId: meta?.sessionId,
          update: { sessionUpdate: "user_message_chunk", content },
          _meta: { acpGateway: { synthesized: true, connectionId: connId, user, keyId } },
        },
      });
      this.store.appendUpdate(text, undefined, at);
      this.clients.broadcast(text, connId);
    }
    // The PR's prompt_received (decision 0060): to the other clients that came by attach, after the
    // echo above and before the agent streams (the prompt goes to the agent after this returns).
    if (meta && this.clients.hasAttached(connId))
      this.clients.toAttached(promptReceivedUpdate(meta.sessionId, isObject(params) ? params.prompt : undefined, peerView(from)), connId);
    // A session the agent has not named is called by its first prompt, until the agent names it.
    const first = meta && meta.title == null ? titleFromPrompt(blocks) : null;
    if (first) this.setTitle(first);
  }

  /**
   * The PR's turn_complete (decision 0060) to the clients that came by attach but the prompter's
   * connection (its prompt's answer tells it). Not logged: the replay's history has the turn's messages.
   */
  turnCompleted(turn: { connId: string; fromSeq?: number }, end: TurnEnd): void {
    const meta = this.store.meta;
    // The log is read for the messageId only when someone is to be told.
    if (!meta || !this.clients.hasAttached(turn.connId)) return;
    const messageId = lastAgentMessageId(this.ctx.storage.sql, turn.fromSeq ?? 0);
    this.clients.toAttached(turnCompleteUpdate(meta.sessionId, end, messageId), turn.connId);
  }

  setTitle(title: string): void {
    const meta = this.store.meta;
    if (!meta || meta.title === title) return;
    this.store.meta = { ...meta, title };
    this.ctx.waitUntil(
      touchSession(this.env.DB, meta.tenantId, meta.sessionId, { updatedAt: Date.now(), title }).catch((e: unknown) =>
        sessionLog(this.store).warn("session.index_title_failed", "updating the session's title in the index failed", {}, e),
      ),
    );
  }

  /** session/load answers with the modes of session/new; keep the current one up to date. Returns the mode it replaced. */
  setCurrentMode(modeId: string): string | null {
    const meta = this.store.meta;
    const modes = meta?.result?.modes;
    if (!meta || !isObject(modes)) return null;
    const from = typeof modes.currentModeId === "string" ? modes.currentModeId : null;
    this.store.meta = { ...meta, result: { ...meta.result, modes: { ...modes, currentModeId: modeId } } };
    return from;
  }

  /** The session's configuration options (model, reasoning…) as last reported: part of the session/load answer. */
  setConfigOptions(configOptions: unknown[]): void {
    const meta = this.store.meta;
    if (!meta) return;
    this.store.meta = { ...meta, result: { ...meta.result, configOptions } };
  }

  touchIndex(): void {
    const meta = this.store.meta;
    if (!meta) return;
    this.ctx.waitUntil(
      touchSession(this.env.DB, meta.tenantId, meta.sessionId, { updatedAt: Date.now() }).catch((e: unknown) =>
        sessionLog(this.store).warn("session.index_failed", "updating the session index failed", {}, e),
      ),
    );
  }

  /** A gateway notice: kept in the session's log and sent to every client; an ACP `notice` beside it where one says it (decision 0063). */
  notice(method: string, params: object): void {
    const text = JSON.stringify({ jsonrpc: "2.0", method, params });
    this.store.append("notice", text);
    this.clients.broadcast(text);
    this.clients.noticeBeside(method, params);
  }
}
