// The AgentObject's connections to its agent: the dial-in sockets (the agent's own, or the edge's
// control socket; hibernatable, restored from their attachments) and a dial_out agent's outbound
// socket (not hibernatable: it lives while the object does). Which connection is current is the
// store's epoch (the relay decides epochs); this file only finds, keeps and forgets the sockets.

import type { Env } from "../../core/env";
import type { Limits } from "../../protocol/tenant-limits";
import type { AgentLine } from "../../protocol/agent-relay";
import { RpcError } from "../../protocol/jsonrpc";
import { ErrorCode } from "../../core/rpc-errors";
import { CLOSE, closeQuietly } from "../../core/close-codes";
import type { AgentRates } from "../../connection/tenant-limits";
import { Dialer } from "./dialer";
import type { AgentStore } from "./store";

/** A dial-in socket's attachment (under 2 KB): its connection epoch, its key, and whether it is the edge's control socket. */
export interface Attachment {
  epoch: number;
  keyId?: string;
  expiresAt?: number | null;
  limits?: Partial<Limits>;
  edge?: boolean;
}

/** A connection to the agent: the dial-in socket (the edge's control socket, or the agent's own) or a dial-out one. */
export interface Line extends AgentLine {
  ws: WebSocket;
  epoch: number;
}

export class AgentLines {
  private readonly dialer = new Dialer();
  /** The current epoch's dial-in socket once found (finding it deserialises every socket's attachment). */
  private dialIn?: Line;
  /** The outbound connection of a dial_out agent. */
  private dialOut?: Line;
  private connecting?: Promise<WebSocket | undefined>;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly store: AgentStore,
    private readonly rates: AgentRates,
    /** Every send on a line goes through here (a test may withhold grants: agent-testing.ts). */
    private readonly send: (ws: WebSocket, text: string) => void,
  ) {}

  /** A line over `ws`: its sends go through `send`. */
  lineOf(ws: WebSocket, epoch: number, edge: boolean): Line {
    return { ws, epoch, edge, send: (text) => this.send(ws, text) };
  }

  /** A newer dial-in connection takes over: the older sockets are closed; whether there were any. */
  closeDialIns(): boolean {
    const previous = this.ctx.getWebSockets();
    this.dialIn = undefined;
    for (const old of previous) closeQuietly(old, CLOSE.replaced, "replaced by a newer connection of the same agent");
    return previous.length > 0;
  }

  /** Accepts the object's end of a new dial-in socket as the current line of `attachment.epoch`. */
  acceptDialIn(ws: WebSocket, attachment: Attachment): void {
    this.ctx.acceptWebSocket(ws, [`key:${attachment.keyId}`]);
    ws.serializeAttachment(attachment);
    this.dialIn = this.lineOf(ws, attachment.epoch, attachment.edge === true);
  }

  /** A dial-in socket, restored from its attachment (and kept, when it is the current epoch's). */
  dialInOf(ws: WebSocket): Line | undefined {
    if (this.dialIn?.ws === ws) return this.dialIn;
    const attachment = ws.deserializeAttachment() as Attachment | undefined;
    this.rates.overrides ??= attachment?.limits;
    if (!attachment) return undefined;
    const line = this.lineOf(ws, attachment.epoch, attachment.edge === true);
    if (attachment.epoch === this.store.epoch) this.dialIn = line;
    return line;
  }

  /** A dial-in socket is closing: the epoch it ends, if it is the current one. */
  forget(ws: WebSocket): number | undefined {
    if (this.dialIn?.ws === ws) this.dialIn = undefined;
    const attachment = ws.deserializeAttachment() as Attachment | undefined;
    return attachment && attachment.epoch === this.store.epoch ? attachment.epoch : undefined;
  }

  /** The current epoch's connection. */
  current(): Line | undefined {
    const epoch = this.store.epoch;
    if (this.dialOut?.epoch === epoch) return this.dialOut;
    if (this.dialIn?.epoch === epoch) return this.dialIn;
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as Attachment | undefined;
      if (attachment?.epoch !== epoch) continue;
      this.dialIn = this.lineOf(ws, epoch, attachment.edge === true);
      return this.dialIn;
    }
    return undefined;
  }

  /** The agent's connection: the dial-in socket, or for a dial_out agent one opened now (`onOpen` makes it current). */
  async ensure(onOpen: (ws: WebSocket) => Promise<void>): Promise<AgentLine | undefined> {
    const line = this.current();
    if (line) return line;
    const meta = this.store.meta;
    if (!meta) return undefined;
    this.connecting ??= this.dialer.connect(this.env, meta, { onOpen }).finally(() => {
      this.connecting = undefined;
    });
    const ws = await this.connecting;
    return ws ? this.lineOf(ws, this.store.epoch, false) : undefined;
  }

  /** The dial-out connection of `epoch` is up and current. */
  dialedOut(ws: WebSocket, epoch: number): Line {
    this.dialOut = this.lineOf(ws, epoch, false);
    return this.dialOut;
  }

  /** Forgets the dial-out line if it is still `line`; whether it was. */
  dropDialOut(line: AgentLine): boolean {
    if (this.dialOut !== line) return false;
    this.dialOut = undefined;
    return true;
  }

  /** Closes the dial-out connection (the tenant disabled, the agent removed): its epoch, if there was one. */
  closeDialOut(reason: string): number | undefined {
    const dialOut = this.dialOut;
    if (!dialOut) return undefined;
    this.dialOut = undefined;
    closeQuietly(dialOut.ws, CLOSE.normal, reason);
    return dialOut.epoch;
  }

  /** The last dial-out error, if the agent is dial_out and unreachable. */
  get unreachable(): string | undefined {
    return this.dialer.lastError;
  }

  /** The error a request gets when there is no connection to the agent. */
  notConnected(agent: string): RpcError {
    const unreachable = this.dialer.lastError;
    return unreachable
      ? new RpcError(ErrorCode.internalError, `The agent "${agent}" is unreachable: ${unreachable}`, { reason: "agent_unreachable" })
      : new RpcError(ErrorCode.internalError, `The agent "${agent}" is not connected to the gateway; start it or try again later`, {
          reason: "agent_not_connected",
        });
  }
}
