// A session's connection to the gateway: an AcpClient opened for one agent and initialized, whose
// messages are kept until the session view listens (a session/new's first updates can arrive before
// the view is on screen). The console opens one link per session it shows, so switching sessions
// detaches cleanly. When the connection drops (the gateway restarted, the network went away) the
// link opens a new one by itself, with backoff (reconnect.ts), and first resumes the session's stream
// where it left off (`stream/resume`, decision 0050): the view gets only what it missed, and a prompt
// in flight its own answer. Only when the gateway cannot resume (it restarted, the window passed) is
// the view told to attach the session again with session/load. A close retrying cannot fix ends the
// link, with why. The gateway's requests the dropped socket left open are withdrawn at once: their
// ids were that socket's, and a new socket's same id names another request.

import { AcpClient, type Incoming, type JsonObject, isObject } from "./acp";
import type { Api } from "./api";
import { queuesPrompts } from "./prompt-queue";
import { reconnectDelayMs, reconnectVerdict } from "./reconnect";

/** Where the link is, for the person: connected, trying again (attempt, when), or closed for good (why). */
export type LinkState = { state: "open" } | { state: "reconnecting"; attempt: number; retryAt: number } | { state: "closed"; why: string };

interface LinkListener {
  onMessage(m: Incoming): void;
  /** A new connection is open after a drop and the session's stream could not be resumed: attach the session again. */
  onReconnected(): void;
  onState(state: LinkState): void;
}

/** Numbers each link, so the view keyed on it is remounted for a new link and never for a reconnect. */
let links = 0;

export class SessionLink {
  /** This link's own number: stable across its reconnects (the connection id is not). */
  readonly id = ++links;
  private buffer: Incoming[] = [];
  private listener: LinkListener | null = null;
  private closedByUs = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  state: LinkState = { state: "open" };
  connectionId: string | null = null;
  agentConnected = false;
  /** The agent's served capabilities advertise prompt queueing (decision 0067): a prompt while a turn runs joins it. */
  queuesPrompts = false;
  client!: AcpClient;

  private constructor(
    readonly agent: string,
    private readonly api: Api,
  ) {}

  /** Opens and initializes; a refused connection says why in words. */
  static async open(api: Api, agent: string): Promise<SessionLink> {
    const link = new SessionLink(agent, api);
    await link.connect();
    return link;
  }

  /** Opens a connection; after a drop (`previous`), resumes its streams if it can. True when it resumed. */
  private async connect(previous?: AcpClient): Promise<boolean> {
    const client = await AcpClient.open(this.agent, this.api, {
      onMessage: (m) => this.deliver(m),
      onClose: (code, reason) => this.dropped(client, code, reason),
    });
    this.client = client;
    if (previous && (await this.resume(client, previous))) return true;
    const init = await client.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: {},
      clientInfo: { name: "acp-gateway-web-console", version: "1" },
    });
    const meta = isObject(init._meta) && isObject(init._meta.acpGateway) ? init._meta.acpGateway : {};
    this.connectionId = typeof meta.connectionId === "string" ? meta.connectionId : null;
    this.agentConnected = meta.agentConnected === true;
    this.queuesPrompts = queuesPrompts(init);
    return false;
  }

  /** `stream/resume` as the new socket's first frame; what it could not resume fails, and the view loads the session. */
  private async resume(client: AcpClient, previous: AcpClient): Promise<boolean> {
    const streams = previous.streams;
    if (this.connectionId === null || Object.keys(streams).length === 0) {
      previous.failWaiting("the connection to the gateway was lost");
      return false;
    }
    // Adopted first: a prompt's answer may come in the replay, before the resume's own answer.
    client.adopt(previous);
    const answer = await client
      .request<JsonObject>("stream/resume", { connectionId: this.connectionId, streams })
      .catch(() => ({}) as JsonObject);
    const resumed = new Set(Array.isArray(answer.resumed) ? answer.resumed.filter((s) => typeof s === "string") : []);
    client.failWaiting("the session's stream could not be resumed", (w) => w.sessionId === undefined || !resumed.has(w.sessionId));
    return resumed.size > 0;
  }

  private deliver(m: Incoming): void {
    if (this.listener) this.listener.onMessage(m);
    else this.buffer.push(m);
  }

  get isOpen(): boolean {
    return this.state.state === "open" && this.client.isOpen;
  }

  listen(listener: LinkListener): void {
    this.listener = listener;
    const kept = this.buffer;
    this.buffer = [];
    for (const m of kept) listener.onMessage(m);
    listener.onState(this.state);
  }

  close(): void {
    this.closedByUs = true;
    clearTimeout(this.retryTimer);
    this.listener = null;
    this.client.close();
  }

  private setState(state: LinkState): void {
    this.state = state;
    this.listener?.onState(state);
  }

  private dropped(client: AcpClient, code: number, reason: string): void {
    // While reconnecting, a new connection that fails is retried by `retry`'s own failure path.
    if (this.closedByUs || client !== this.client || this.state.state === "reconnecting") return;
    for (const requestId of client.unansweredRequests) this.deliver({ method: "$/cancel_request", params: { requestId } });
    const verdict = reconnectVerdict(code);
    if (!verdict.retry) {
      client.failWaiting("the connection to the gateway closed");
      return this.setState({ state: "closed", why: reason ? `${verdict.why} (${reason})` : verdict.why });
    }
    this.retry(0);
  }

  private retry(attempt: number): void {
    const delay = reconnectDelayMs(attempt);
    this.setState({ state: "reconnecting", attempt: attempt + 1, retryAt: Date.now() + delay });
    this.retryTimer = setTimeout(() => {
      if (this.closedByUs) return;
      // The client that holds what waits: the dropped one, or the last attempt's that adopted it.
      this.connect(this.client).then(
        (resumed) => {
          if (this.closedByUs) return this.client.close();
          this.setState({ state: "open" });
          if (!resumed) this.listener?.onReconnected();
        },
        () => {
          if (!this.closedByUs) this.retry(attempt + 1);
        },
      );
    }, delay);
  }
}
