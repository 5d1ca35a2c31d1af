// Where a ClientConnection's outgoing messages go. The connection logic is the same for every
// transport; a sink is the one thing that differs: a WebSocket, or an HTTP connection's SSE streams.

import { closeQuietly } from "../core/close-codes";
import type { TransportCapability } from "../protocol/stream-cursor";
import { WEBSOCKET_RETENTION } from "../protocol/stream-ring";

export interface ClientSink {
  /** One JSON-RPC message as text; `sessionId` names the session it came from, when it came from one. */
  send(text: string, sessionId?: string): void;
  /** Ends the client's transport; `code` is a WebSocket close code. */
  close(code: number, reason: string): void;
  /** What the transport offers of the draft RFD's resumable streams, advertised in `initialize` (decision 0050); absent: not resumable. */
  readonly transport?: TransportCapability;
}

/** A sink over an accepted WebSocket. Sending on a closed socket throws, which the connection treats as gone. */
export function webSocketSink(socket: WebSocket): ClientSink {
  return {
    // Sessions keep each socket's stream (durable-objects/session/retained-streams.ts); the connection's own answers are not kept.
    transport: { resumable: { retentionMessages: WEBSOCKET_RETENTION.messages, retentionSeconds: WEBSOCKET_RETENTION.seconds } },
    send: (text) => socket.send(text),
    close: (code, reason) => closeQuietly(socket, code, reason),
  };
}
