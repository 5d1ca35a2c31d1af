// The AgentObject's ends of the agent links (protocol/agent-link-wire.ts): one WebSocket to each
// session it delivers to, opened at the first delivery and used from the next one on (a hop over a
// WebSocket between two objects costs well under half an RPC call's). Until a link is open, and
// whenever it fails, the RPC method is used: a delivery is one batch at a time per session
// (agent-object.ts `sendBatch`), so switching between the two never reorders anything.
//
// These are outgoing sockets, so they keep the object in memory while they are open: a link unused
// for one to two idle times (AGENT_LINK_IDLE_MS, 10 s; two sweeps) is closed, and an idle agent's
// object can hibernate again. A batch the session has not acked within ACK_TIMEOUT_MS fails (the
// link is closed and the outbox re-sends it, by RPC; the session applies each item once, by its
// seq): a link whose far end vanished without a close event can delay a session, never stop it.
// A shell over protocol/object-channel.ts (the opener's end), which decides all of this; here are
// the sockets, their events, the one timer and the idle sweep's clock. The edge's links
// (worker/agent-connection.ts) are the same class.

import { linkToAgent } from "../../protocol/agent-link-wire";
import { ObjectChannel } from "../../protocol/object-channel";
import { channelSocketPort } from "../channel-socket";
import { DeadlineTimer } from "../pending";
import { log } from "../../core/log";
import { testSeams } from "../../core/test-seam";

/** A link nothing went over for this long is closed (the next delivery goes by RPC and opens it again). */
export const LINK_IDLE_MS = 10_000;
/**
 * At most this many links per AgentObject: an agent busy in more sessions at once uses RPC for the
 * rest. (The platform's six-connection limit counts connections waiting for response headers; an
 * open WebSocket is past them, so a seventh link only waits for an earlier one's 101.)
 */
const MAX_LINKS = 256;
/**
 * A batch whose frames hold more text than this goes by RPC even when the link is open: the link
 * saves a hop's fixed cost, the same for any size, and a large message costs more over it (a 64 KiB
 * update: 4.5–4.6 ms median over the link, 3.7–4.1 ms by RPC, bench runs minutes apart).
 */
const LINK_MAX_CHARS = 16 * 1024;
/** A batch not acked for this long counts as failed. */
const ACK_TIMEOUT_MS = 10_000;
/** After a link could not be opened, deliveries go by RPC for this long before it is tried again. */
const REOPEN_AFTER_MS = 5_000;

export interface SessionLinksPorts {
  /** Opens the session's end (SessionObject `fetch` with AGENT_LINK_HEADER); undefined if it refused. */
  open(sessionId: string): Promise<WebSocket | undefined>;
  /** A frame the session sent on the link (under its key `n`), handed on as its RPC `toAgent` would be: true if it reached the agent. */
  toAgent(sessionId: string, frame: unknown, n: number): Promise<boolean>;
  waitUntil(promise: Promise<unknown>): void;
  /** How long a link may go unused before it is closed (LINK_IDLE_MS; tests set it short). */
  idleMs: number;
  /** Whether an unused link is kept all the same (the edge's, while the session has a request of the agent to answer). */
  keep?(sessionId: string): boolean;
}

/**
 * Opens a link to a session: its `fetch` with `header` naming the agent (AGENT_LINK_HEADER from the
 * AgentObject, EDGE_LINK_HEADER from the edge). Undefined when the session refuses it (not this
 * agent's session).
 */
export async function openSessionLink(session: { fetch: Fetcher["fetch"] }, header: string, agent: string): Promise<WebSocket | undefined> {
  const response = await session.fetch("https://session.internal/link", { headers: { Upgrade: "websocket", [header]: agent } });
  return response.status === 101 ? (response.webSocket ?? undefined) : undefined;
}

/**
 * The test seam (test/workerd/agent-link.test.ts, through the AgentObject's `agentTesting(...).links`):
 * what a test may read of one object's links, and the functions it may replace to inject a fault, in
 * place of casts to private members. No member of the class; production code never sets it.
 */
export interface LinksTesting {
  /** The open link's socket to the session, if one is open. */
  socket(sessionId: string): WebSocket | undefined;
  /** How many links are open. */
  readonly open: number;
  /** How long a link may go unused (SessionLinksPorts `idleMs`): a test that needs a link kept sets LINK_IDLE_MS. */
  idleMs: number;
  /** The hand-off of a frame from a link (SessionLinksPorts `toAgent`): a test wraps it to cut the link mid-answer. */
  toAgent: SessionLinksPorts["toAgent"];
  /** Opening a session's link (SessionLinksPorts `open`): a test wraps it to count the links opened. */
  openLink: SessionLinksPorts["open"];
  /** Called once a batch went on a session's link and awaits its ack (`deliver`). */
  sent?: (sessionId: string) => void;
  /** Closes every link, as the object's own `closeAll` (a batch in flight fails). */
  closeAll(): void;
}

const seams = testSeams<SessionLinks, LinksTesting>("SessionLinks");

/** A live SessionLinks' test seam (LinksTesting). */
export const linksTesting = seams.of;

export class SessionLinks {
  /** The opener's end of every link (protocol/object-channel.ts): it decides, this shell does the I/O. */
  private readonly channel: ObjectChannel<WebSocket>;
  private readonly timer: DeadlineTimer;
  private sweeping = false;

  constructor(private readonly ports: SessionLinksPorts) {
    const channel = (this.channel = new ObjectChannel<WebSocket>(
      channelSocketPort((sessionId) => this.open(sessionId)),
      {
        timeoutMs: ACK_TIMEOUT_MS,
        overdueDropsLink: true,
        maxLinks: MAX_LINKS,
        reopenAfterMs: REOPEN_AFTER_MS,
        maxBatchChars: LINK_MAX_CHARS,
      },
    ));
    this.timer = new DeadlineTimer(
      () => channel.nextDeadline(),
      (now) => channel.tick(now),
    );
    seams.attach(this, {
      socket: (sessionId) => channel.linkOf(sessionId),
      get open() {
        return channel.open;
      },
      get idleMs() {
        return ports.idleMs;
      },
      set idleMs(ms) {
        ports.idleMs = ms;
      },
      get toAgent() {
        return ports.toAgent;
      },
      set toAgent(toAgent) {
        ports.toAgent = toAgent;
      },
      get openLink() {
        return ports.open;
      },
      set openLink(open) {
        ports.open = open;
      },
      closeAll: () => this.closeAll(),
    });
  }

  /**
   * Delivers a batch on the session's link: resolves when the session acked it (after its commit),
   * rejects when the link fails first. Undefined when there is no open link (one is then opened for
   * the next batch) or the batch is large (LINK_MAX_CHARS): the caller uses RPC.
   */
  deliver(sessionId: string, items: unknown[]): Promise<void> | undefined {
    let settled!: (acked: boolean) => void;
    const acked = new Promise<void>((resolve, reject) => {
      settled = (ok) => (ok ? resolve() : reject(new Error("the link to the session closed before it acknowledged the batch")));
    });
    if (!this.timer.after(() => this.channel.deliver(sessionId, items, Date.now(), settled))) return undefined;
    seams.find(this)?.sent?.(sessionId);
    return acked;
  }

  /** Opens the session's link unless it is open (or opening): the edge's, for the session's answer to a request. */
  prepare(sessionId: string): void {
    this.channel.prepare(sessionId, Date.now());
  }

  /** Closes every link (its batch in flight, if any, fails). */
  closeAll(): void {
    this.timer.after(() => this.channel.closeAll("link closed"));
  }

  /** The channel asks for a link: opened by the port, then adopted (or RPC for a while, if it could not be). */
  private open(sessionId: string): void {
    const opened = this.ports
      .open(sessionId)
      .catch((error: unknown) => {
        log("warn", "agent.link_open_failed", "opening the link to a session failed; RPC is used", { sessionId }, error);
        return undefined;
      })
      .then((ws) => {
        ws?.accept();
        this.channel.opened(sessionId, ws, Date.now());
        if (!ws) return;
        ws.addEventListener("message", (event) => {
          if (typeof event.data === "string") this.onMessage(sessionId, ws, event.data);
        });
        ws.addEventListener("close", () => this.timer.after(() => this.channel.drop(ws, "link closed")));
        ws.addEventListener("error", () => this.timer.after(() => this.channel.drop(ws, "link closed")));
        this.sweepLater();
      });
    this.ports.waitUntil(opened);
  }

  /** An ack settles the link's batch; a frame from the session is handed on and answered on the link. */
  private onMessage(sessionId: string, ws: WebSocket, data: string): void {
    const message = linkToAgent(data);
    if (!message) return;
    const frame = this.timer.after(() => this.channel.fromAcceptor(ws, message));
    if (!frame) return;
    this.ports.waitUntil(
      this.ports.toAgent(sessionId, frame.frame, frame.n).then(
        (delivered) => this.channel.handedOn(ws, frame.n, delivered),
        (error: unknown) => {
          log("warn", "agent.link_frame_failed", "a frame from a session's link failed", { sessionId }, error);
          this.channel.handedOn(ws, frame.n, "failed");
        },
      ),
    );
  }

  /** Closes links that carried nothing since the last sweep, so an idle object can hibernate. */
  private sweepLater(): void {
    if (this.sweeping) return;
    this.sweeping = true;
    setTimeout(() => {
      this.sweeping = false;
      if (this.timer.after(() => this.channel.sweep((sessionId) => this.ports.keep?.(sessionId) ?? false))) this.sweepLater();
    }, this.ports.idleMs);
  }
}
