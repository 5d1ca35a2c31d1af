// A session's connection to the gateway: an AcpClient opened for one agent and initialized, whose
// messages are kept until the session view listens (a session/new's first updates can arrive before
// the view is on screen). The console opens one link per session it shows, so switching sessions
// detaches cleanly. When the connection drops (the gateway restarted, the network went away) the
// link opens a new one by itself, with backoff (reconnect.ts), and tells the view, which attaches
// the session again with session/load; a close retrying cannot fix ends the link, with why.

import { AcpClient, type Incoming, isObject } from "./acp";
import type { Api } from "./api";
import { reconnectDelayMs, reconnectVerdict } from "./reconnect";

/** Where the link is, for the person: connected, trying again (attempt, when), or closed for good (why). */
export type LinkState = { state: "open" } | { state: "reconnecting"; attempt: number; retryAt: number } | { state: "closed"; why: string };

interface LinkListener {
  onMessage(m: Incoming): void;
  /** A new connection is open after a drop: attach the session again. */
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

  private async connect(): Promise<void> {
    const client = await AcpClient.open(this.agent, this.api, {
      onMessage: (m) => (this.listener ? this.listener.onMessage(m) : this.buffer.push(m)),
      onClose: (code, reason) => this.dropped(client, code, reason),
    });
    this.client = client;
    const init = await client.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: {},
      clientInfo: { name: "acp-gateway-web-console", version: "1" },
    });
    const meta = isObject(init._meta) && isObject(init._meta.acpGateway) ? init._meta.acpGateway : {};
    this.connectionId = typeof meta.connectionId === "string" ? meta.connectionId : null;
    this.agentConnected = meta.agentConnected === true;
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
    const verdict = reconnectVerdict(code);
    if (!verdict.retry) return this.setState({ state: "closed", why: reason ? `${verdict.why} (${reason})` : verdict.why });
    this.retry(0);
  }

  private retry(attempt: number): void {
    const delay = reconnectDelayMs(attempt);
    this.setState({ state: "reconnecting", attempt: attempt + 1, retryAt: Date.now() + delay });
    this.retryTimer = setTimeout(() => {
      if (this.closedByUs) return;
      this.connect().then(
        () => {
          if (this.closedByUs) return this.client.close();
          this.setState({ state: "open" });
          this.listener?.onReconnected();
        },
        () => {
          if (!this.closedByUs) this.retry(attempt + 1);
        },
      );
    }, delay);
  }
}
