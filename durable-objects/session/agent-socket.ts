// The session's end of the agent link (protocol/agent-link-wire.ts): the AgentObject opens it and the
// session accepts it, hibernatable, beside its clients' sockets (never counted as one). Both ways:
// the agent's batches come in on it (acked after they are applied, so the ack waits for the commit
// exactly as an RPC's return does), and frames for the agent go out on it, each answered `sent` or
// `failed`. A frame whose answer is lost with the link is handed to `toAgent`'s RPC path once.
// The edge's links (opened by worker/agent-connection.ts) carry the agent's frames in, and the
// session's answers to the agent's requests out, answered the same way (decision 0034).
// A shell over protocol/object-channel.ts (the acceptor's end), which decides; here are the sockets
// (found by tag, so they outlive a hibernation) and the one timer.
// Below, `agentChannels`: the session's three ways to its agent as protocol/session-machine.ts `AgentOrder`
// picks them — the edge link and the agent link (this socket), and an RPC call to the AgentObject on a
// stub kept until a call on it fails (a stub whose object crashed stays broken). Each is one try;
// which to take, and the second try, are the machine's.

import type { LinkToSession } from "../../protocol/agent-link-wire";
import { type FrameOutcome, ObjectChannel } from "../../protocol/object-channel";
import type { ToAgent } from "../agent/contract";
import type { AgentChannels } from "../../protocol/session-machine";
import type { Env } from "../../core/env";
import { type AgentStub, objects } from "../objects";
import type { SessionStore } from "./store";
import type { SessionTesting } from "./session-testing";
import { sessionLog } from "./session-log";
import { channelSocketPort } from "../channel-socket";
import { DeadlineTimer } from "../pending";

const AGENT_LINK_TAG = "agent-link";
/**
 * A frame the AgentObject has not answered for this long failed (it is tried again by RPC, which the
 * AgentObject never hands on twice): a link whose far end vanished without a close event can delay
 * a frame, never lose it. Longer than any wait of the AgentObject's own (an agent's initialize: 10 s).
 */
const ANSWER_TIMEOUT_MS = 30_000;

/** How a frame sent on the link ended: it reached the agent, it did not, or the link or the AgentObject failed it. */
export type LinkOutcome = FrameOutcome;

/** The tag of the edge's links (session-object.ts `acceptEdgeLink`): batches in, answers to the agent's requests out. */
export const EDGE_LINK_TAG = "edge-link";

/** Whether a socket's attachment (read once by the caller) is an edge link's. */
export function isEdgeLinkAttachment(attachment: unknown): boolean {
  return (attachment as { link?: string } | null | undefined)?.link === "edge";
}

/** Whether a socket's attachment (read once by the caller) is a link's, the AgentObject's or an edge's: frames awaiting an answer on it fail when it closes. */
export function isLinkAttachment(attachment: unknown): boolean {
  const link = (attachment as { link?: string } | null | undefined)?.link;
  return link === "agent" || link === "edge";
}

export class AgentSocket {
  /** The acceptor's end of the links (protocol/object-channel.ts): the frames sent on them and not answered yet. */
  private readonly channel: ObjectChannel<WebSocket>;
  private readonly timer: DeadlineTimer;

  constructor(private readonly ctx: DurableObjectState) {
    const channel = (this.channel = new ObjectChannel<WebSocket>(
      channelSocketPort(), // the AgentObject and the edge open the links
      { timeoutMs: ANSWER_TIMEOUT_MS, overdueDropsLink: false },
    ));
    this.timer = new DeadlineTimer(
      () => channel.nextDeadline(),
      (now) => channel.tick(now),
    );
  }

  /** A new link from the AgentObject; an older one (from an instance before) is closed. */
  accept(server: WebSocket): void {
    this.timer.after(() => {
      for (const old of this.ctx.getWebSockets(AGENT_LINK_TAG)) this.channel.drop(old, "replaced by a newer link");
    });
    this.ctx.acceptWebSocket(server, [AGENT_LINK_TAG]);
    server.serializeAttachment({ link: "agent" });
  }

  /**
   * Sends a frame on the link under its key `n` (unique across this session's instances); false when
   * there is none (the caller uses RPC). `settle` is called exactly once. The object stays in memory until then, as it does for an RPC in flight.
   * `edge`: on the newest edge link instead (an answer to the agent's request; the edge fails one
   * that is not its connection's, and the caller then tries the AgentObject).
   */
  send(frame: ToAgent, n: number, settle: (outcome: LinkOutcome) => void, edge = false): boolean {
    const ws = this.ctx.getWebSockets(edge ? EDGE_LINK_TAG : AGENT_LINK_TAG).at(-1);
    if (!ws) return false;
    let done!: () => void;
    const sent = this.timer.after(() =>
      this.channel.send(ws, n, frame, Date.now(), (outcome) => {
        done();
        settle(outcome);
      }),
    );
    if (sent) this.ctx.waitUntil(new Promise<void>((resolve) => (done = resolve)));
    return sent;
  }

  /** The AgentObject's answer to a frame sent on the link (one sent by an instance before this one is ignored). */
  answered(message: Extract<LinkToSession, { t: "sent" | "failed" }>): void {
    this.timer.after(() => this.channel.answered(message));
  }

  /** The link closed: what was sent on it and not answered failed, oldest first (the caller tries again, in order). */
  lost(ws: WebSocket): void {
    this.timer.after(() => this.channel.lost(ws, "the agent link closed"));
  }
}

/** Nothing goes out for a session that is gone (never initialised, or deleted): each way then says no. */
export function agentChannels(
  ctx: DurableObjectState,
  env: Env,
  store: SessionStore,
  socket: AgentSocket,
  /**
   * The object's test seam (session-testing.ts), read at each use: a test may replace the stub of each
   * RPC call (`agent`) and refuse or watch each frame sent on a link (`onLinkSend`). Both hand on the
   * real one unless a test set its hook.
   */
  testing: () => Pick<SessionTesting, "agent" | "onLinkSend">,
): AgentChannels {
  let agentStub: AgentStub | undefined;
  const onLink = (frame: ToAgent, send: () => boolean) => store.meta !== undefined && (testing().onLinkSend?.(frame, send) ?? send());
  return {
    edge: (frame, key, settle) => onLink(frame, () => socket.send(frame, key, settle, true)),
    link: (frame, key, settle) => onLink(frame, () => socket.send(frame, key, settle)),
    rpc: (frame, key, fresh, settle) => {
      const meta = store.meta;
      if (!meta) return false;
      if (fresh) agentStub = undefined;
      const cached = (agentStub ??= objects.agent(env, meta.tenantId, meta.agent));
      const ref = { tenantId: meta.tenantId, sessionId: meta.sessionId };
      ctx.waitUntil(
        (testing().agent?.(cached) ?? cached).toAgent(meta.agent, ref, frame, key).then(
          (delivered) => settle(delivered ? "delivered" : "undelivered"),
          (e: unknown) => {
            sessionLog(store).warn("session.agent_delivery_failed", "handing a frame to the agent failed; tried again", {}, e);
            if (agentStub === cached) agentStub = undefined;
            settle("threw");
          },
        ),
      );
      return true;
    },
  };
}
