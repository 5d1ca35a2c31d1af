// The SessionObject's test seam (session-object.ts `sessionTesting`, core/test-seam.ts): kept beside
// each instance, never a member, so no stub reaches it.

import type { AgentStub } from "../objects";
import type { ToAgent } from "../agent/contract";
import type { AuditOutbox } from "./audit-outbox";
import type { SessionStore } from "./store";

/**
 * The test seam (test/workerd): what a test may read of a live instance (`sessionTesting`, given the
 * instance runInDurableObject hands it), and the one hook it may set, in place of casts to private
 * fields. The gateway never reads it but for the hook's one call site, in webSocketMessage. It is no
 * member of the class, so it is nothing a stub can reach over RPC.
 */
export interface SessionTesting {
  /** The session's state as this instance holds it (store.ts): read it; a write goes around the object's logic. */
  readonly store: SessionStore;
  /** The audit outbox (audit-outbox.ts): entries waiting for D1, and when it tries again. */
  readonly audits: Pick<AuditOutbox, "waiting" | "retryAt">;
  /** When the turn's idle timer fires (turn-watch.ts), or undefined when no turn runs. */
  idleAt(): number | undefined;
  /** How many frames for the agent wait in the session behind an answer on an edge link (protocol/session-machine.ts `AgentOrder`). */
  heldAfterEdgeAnswer(): number;
  /**
   * Set by a test to watch or cut the messages that come on an agent or edge link: called instead of
   * the object's own handling, which it is handed as `apply` (`ack: false`: applied, the ack not sent).
   */
  onLinkMessage?: (ws: WebSocket, data: string | ArrayBuffer, apply: (ack?: boolean) => void) => void;
  /**
   * Set by a test to refuse or watch a frame for the agent on a link (agent or edge; agent-socket.ts
   * `send`): called instead of sending it, with the send as `send`; false refuses it as a closing
   * link does, and the frame goes by RPC.
   */
  onLinkSend?: (frame: ToAgent, send: () => boolean) => boolean;
  /**
   * Set by a test to a D1 that fails or is slow (test/workerd/fuzz-faults.ts `setD1`): used instead of
   * `env.DB` where the object reaches D1 after it is built (taking a deleted session out of the index,
   * publishing its live state).
   */
  d1?: D1Database;
  /** The connection ids of the client sockets attached now: a test waits for a drop to have reached the session. */
  attached(): string[];
  /**
   * Set by a test to move the clock the dropped clients' retention window is read by (clients.ts,
   * retained-streams.ts, departures.ts): a window lapses without waiting for it.
   */
  now?: () => number;
  /** Set by a test to replace the stub the session calls its AgentObject through by RPC (agent-socket.ts `agentChannels`), given the real one at each call. */
  agent?: (real: AgentStub) => AgentStub;
}
