// The session's answer to an agent that ran a tool call nobody was asked about (decision 0056): the
// machine tells every client (`_acp_gateway/ran_unasked`, decision 0046) and hands it here through its
// `ranUnasked` port; the tenant's setting (tenant-policy.ts: as read when the turn started, else now) decides. Under `stop`
// the session is held — the running turn cancelled as session/cancel cancels it, the clients told why, and every
// prompt refused (protocol/session-machine.ts) until a person who may lift oversight resumes it (`resume`). Either way the
// agent is noted as one that decides itself (its D1 row, GET /v1/agents). `holdForMode` holds a session the
// same way when its agent switches itself into a mode the tenant forbids (decision 0061).

import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { noteDecidesItself } from "../../db/queries/agents";
import { type UnaskedRuns as Choice, type SessionHold, heldMessage, holdOf } from "../../protocol/unasked-runs";
import type { SessionInfo } from "./session-info";
import { sessionLog } from "./session-log";
import type { SessionStore } from "./store";

/** Who lifted a hold, as the clients and the log are told. */
export interface ResumedBy {
  keyId: string;
  user: string | null;
  role: string | null;
}

export interface UnaskedRunsParts {
  db: () => D1Database;
  store: SessionStore;
  info: SessionInfo;
  waitUntil(promise: Promise<unknown>): void;
  /** The tenant's setting (tenant-policy.ts `unaskedRunsNow`): at once when read with the turn, else a read that never rejects. */
  choice(): Choice | Promise<Choice>;
  /** Ends the running turn as a client's session/cancel would, and tells the clients why (protocol/session-machine.ts `stopTurn`). */
  cancelTurn(reason: string, message: string): void;
}

/** How often one session writes the agent's latest unasked run to D1 (an agent in a mode that never asks runs many). */
const NOTE_EVERY_MS = 60_000;

export class UnaskedRuns {
  private notedAt = -Infinity;

  constructor(private readonly parts: UnaskedRunsParts) {}

  /**
   * The machine told the clients of a run nobody asked about (its notice's params): stop the session if
   * the tenant says so — at once with the setting read as the turn started (every moment lets the agent
   * do more, and a late cancel can reach the agent's next prompt), else after reading it.
   */
  ran(notice: Record<string, unknown>): void {
    const { store } = this.parts;
    const meta = store.meta;
    if (!meta) return;
    this.noteOnAgent(meta, notice);
    if (store.hold) return;
    const choice = this.parts.choice();
    if (!(choice instanceof Promise)) {
      if (choice === "stop") this.stop(notice);
      return;
    }
    this.parts.waitUntil(
      choice.then((read) => {
        if (read === "stop") this.stop(notice);
      }),
    );
  }

  /** The agent decides for itself: noted on its row for the API and the console, at most once a minute per session. */
  private noteOnAgent(meta: { tenantId: string; sessionId: string; agent: string }, notice: Record<string, unknown>): void {
    const now = Date.now();
    if (now - this.notedAt < NOTE_EVERY_MS || typeof notice.toolCallId !== "string") return;
    this.notedAt = now;
    const run = {
      at: now,
      sessionId: meta.sessionId,
      toolCallId: notice.toolCallId,
      kind: typeof notice.kind === "string" ? notice.kind : "other",
    };
    this.parts.waitUntil(
      noteDecidesItself(this.parts.db(), meta.tenantId, meta.agent, run).catch((error: unknown) =>
        sessionLog(this.parts.store).warn("session.decides_itself_note_failed", "noting the agent's unasked run failed", {}, error),
      ),
    );
  }

  /** Lifts the hold; false when the session was not held. */
  resume(by: ResumedBy): boolean {
    const { store, info } = this.parts;
    const meta = store.meta;
    if (!meta || !store.hold) return false;
    store.hold = undefined;
    const who = by.user ?? by.keyId;
    info.notice(GATEWAY_NOTIFICATIONS.sessionResumed, {
      sessionId: meta.sessionId,
      by,
      message: `${who} resumed the session: it takes prompts again. The agent may again run tool calls without asking.`,
    });
    sessionLog(store).info("session.resumed", "a held session was resumed", { by: who });
    return true;
  }

  /**
   * The agent switched itself into a mode the tenant forbids (decision 0061): held as for an unasked run —
   * the turn cancelled, the clients told, no prompt until a person resumes it.
   */
  holdForMode(mode: string): void {
    const { store, info } = this.parts;
    const meta = store.meta;
    if (!meta || store.hold) return;
    const hold: SessionHold = { reason: "mode_forbidden", mode, at: Date.now() };
    store.hold = hold;
    const message = heldMessage(meta.sessionId, hold);
    if (store.turn.state === "running") this.parts.cancelTurn("mode_forbidden", message);
    info.notice(GATEWAY_NOTIFICATIONS.sessionHeld, { sessionId: meta.sessionId, hold, message });
    sessionLog(store).warn("session.held", "the agent switched itself into a forbidden mode; the session is held", { mode });
  }

  private stop(notice: Record<string, unknown>): void {
    const { store, info } = this.parts;
    const meta = store.meta;
    // Held by an earlier run while the setting was read: one stop per hold.
    if (!meta || store.hold) return;
    const hold = holdOf(notice, Date.now());
    if (!hold) return;
    store.hold = hold;
    const message = heldMessage(meta.sessionId, hold);
    if (store.turn.state === "running") this.parts.cancelTurn("ran_unasked", message);
    info.notice(GATEWAY_NOTIFICATIONS.sessionHeld, { sessionId: meta.sessionId, hold, message });
    sessionLog(store).warn("session.held", "the agent ran a tool call unasked; the session is held", { toolCallId: hold.toolCallId });
  }
}
