// A session's connection to the gateway: an AcpClient opened for one agent and initialized, whose
// messages are kept until the session view listens (a session/new's first updates can arrive before
// the view is on screen). The console opens one link per session it shows, so switching sessions
// detaches cleanly.

import { AcpClient, type Incoming, isObject } from "./acp";

export class SessionLink {
  private buffer: Incoming[] = [];
  private listener: ((m: Incoming) => void) | null = null;
  private closeListener: ((code: number, reason: string) => void) | null = null;
  connectionId: string | null = null;
  agentConnected = false;
  private constructor(readonly agent: string) {}

  /** Opens and initializes; a refused connection says why in words. */
  static async open(key: string, agent: string): Promise<SessionLink> {
    const link = new SessionLink(agent);
    const client = await AcpClient.open(agent, key, {
      onMessage: (m) => (link.listener ? link.listener(m) : link.buffer.push(m)),
      onClose: (code, reason) => link.closeListener?.(code, reason),
    });
    link.client = client;
    const init = await client.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: {},
      clientInfo: { name: "acp-gateway-web-console", version: "1" },
    });
    const meta = isObject(init._meta) && isObject(init._meta.acpGateway) ? init._meta.acpGateway : {};
    link.connectionId = typeof meta.connectionId === "string" ? meta.connectionId : null;
    link.agentConnected = meta.agentConnected === true;
    return link;
  }

  client!: AcpClient;

  listen(onMessage: (m: Incoming) => void, onClose: (code: number, reason: string) => void): void {
    this.listener = onMessage;
    this.closeListener = onClose;
    const kept = this.buffer;
    this.buffer = [];
    for (const m of kept) onMessage(m);
  }

  close(): void {
    this.listener = null;
    this.closeListener = null;
    this.client.close();
  }
}
