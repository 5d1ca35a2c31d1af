// The AgentObject's frames on the edge's control socket (worker/agent-connection.ts; the wire is
// protocol/agent-edge-wire.ts): text for the agent, its epoch for this connection, a request a session
// makes of the agent (remembered, so its answer goes back to that session), an answer of a session
// that came the long way, and a session's grant to the edge. One answer per request of the agent,
// whichever way it came, is the shell's `EdgeAnswers`, shared with this file.

import { type AgentObjectToEdge, decodeControl } from "../../protocol/agent-edge-wire";
import type { EdgeAnswers } from "../../protocol/edge-routing";
import { type JsonRpcId, isObject } from "../../protocol/jsonrpc";

type GrantFrame = Extract<AgentObjectToEdge, { t: "grant" }>;

/** What the control frames ask of the shell. */
interface ControlIo {
  /** Text for the agent's socket. */
  toAgent(text: string): void;
  /** The AgentObject vouched for a session (it made a request of the agent): it counts towards the rate. */
  sessionSeen(sessionId: string): void;
  /** The AgentObject granted a session's frames to the edge. */
  granted(grant: GrantFrame): void;
  /** A header on the control socket did not decode. */
  malformed(): void;
}

export class ControlFrames {
  /** The AgentObject's requests to the agent that a session made, by their agent-side id: whose the answer is. */
  private readonly answerOwners = new Map<number, string>();
  /** The AgentObject's epoch for this connection (its first control frame): a session's answer names it. */
  private epochOf?: number;

  constructor(
    /** The agent's open requests, and the one answer each gets (a session's, or the AgentObject's). */
    private readonly answers: EdgeAnswers,
    private readonly io: ControlIo,
  ) {}

  get epoch(): number | undefined {
    return this.epochOf;
  }

  /** A frame on the control socket. */
  receive(data: unknown): void {
    if (typeof data !== "string") return;
    const message = decodeControl(data);
    if (!message) return this.io.malformed();
    if (message.t === "plain") {
      if (this.answersNothing(message.text)) return;
      return this.io.toAgent(message.text);
    }
    if (message.t === "epoch") {
      this.epochOf = message.epoch;
      return;
    }
    if (message.t === "answer") {
      if (this.answers.take(message.id, message.s)) this.io.toAgent(message.text);
      return;
    }
    if (message.t === "request") {
      this.answerOwners.set(message.id, message.s);
      this.io.sessionSeen(message.s);
      return this.io.toAgent(message.text);
    }
    if (message.t === "grant") this.io.granted(message);
  }

  /** The session whose request the agent answers under `id` (taken: an id is answered once), if a session's. */
  takeAnswerOwner(id: JsonRpcId | null | undefined): string | undefined {
    if (typeof id !== "number") return undefined;
    const owner = this.answerOwners.get(id);
    this.answerOwners.delete(id);
    return owner;
  }

  /**
   * Whether a plain frame of the AgentObject is an answer of its own (an error in place of a
   * session's) to a request that is not open: answered already, so it is dropped. Any other frame passes.
   */
  private answersNothing(text: string): boolean {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return false; // not JSON: never from the AgentObject
    }
    if (!isObject(value) || !("id" in value) || "method" in value) return false;
    return !this.answers.take(value.id, null);
  }
}
