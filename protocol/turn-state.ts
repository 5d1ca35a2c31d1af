// The turn's state as a resumed stream's acknowledgement reports it (the draft RFD "Durable &
// Resumable HTTP/WS Transport", its v1 shim `_meta["acp/turnState"] {state, promptRequestId}`;
// decision 0050): whether the turn the client was watching still runs, ended, or waits on a person.
// Pure; the session reads its own turn and requests, and this says what a client is told.

import type { JsonRpcId } from "./jsonrpc";
import { TURN_STATE_META } from "./stream-cursor";

export interface StreamTurnState {
  /** The RFD's three states: `requires_action` while a request of the turn waits on a person. */
  state: "idle" | "running" | "requires_action";
  /** The client's own id of the session/prompt that started the turn, when this connection sent it; else null. */
  promptRequestId: JsonRpcId | null;
}

/**
 * `turn`: the session's turn state (`cancelling` still runs until the agent answers); `asking`: a
 * permission request waits on people; `prompt`: the prompt's id if this connection sent it.
 */
export function streamTurnState(turn: "idle" | "running" | "cancelling", asking: boolean, prompt: JsonRpcId | null): StreamTurnState {
  if (turn === "idle") return { state: "idle", promptRequestId: null };
  return { state: asking ? "requires_action" : "running", promptRequestId: prompt };
}

/** The `_meta` of a resume acknowledgement: the turn's state of each session resumed (one, on a session's stream). */
export function turnStateMeta(turn: StreamTurnState | undefined): Record<string, unknown> {
  return turn ? { [TURN_STATE_META]: turn } : {};
}

/** The session's turn as it keeps it (session-machine.ts moves it; durable-objects/session/store.ts stores it). */
export type TurnState =
  | { state: "idle" }
  | {
      state: "running" | "cancelling";
      gwId: number;
      connId: string;
      user?: string | null;
      /** Who prompted it (people/answering.ts `personKey`): members answer only their own turn's requests; four eyes refuses their approval. */
      prompter?: string;
      startedAt: number;
      /** The log's last seq when the turn started: its permission requests are after it (turn-watch.ts). */
      fromSeq?: number;
      /**
       * The turn's prompts still in flight (their `gwId`s), once an agent that queues prompts was given a
       * second (decision 0067); absent: the one prompt `gwId`, which stays the turn's name after it is answered.
       */
      prompts?: number[];
      /** Who else prompted into the turn (`personKey`s, besides `prompter`): under four eyes none of them approves. */
      alsoPrompted?: string[];
    };

/** The prompts of a running turn still in flight: the turn ends when the last of them is answered. */
export function promptsInFlight(turn: Exclude<TurnState, { state: "idle" }>): readonly number[] {
  return turn.prompts ?? [turn.gwId];
}
