// The object channel's port (protocol/object-channel.ts `ChannelPort`) over WebSockets, for both of
// its shells (agent/session-links.ts, session/agent-socket.ts): a write that throws is a socket
// closing (its close event follows), and a close may find the socket closed already.

import { encodeLink } from "../protocol/agent-link-wire";
import type { ChannelPort } from "../protocol/object-channel";
import { CLOSE, closeQuietly } from "../core/close-codes";

/** The port; `open` is the opener's (the acceptor opens nothing). */
export function channelSocketPort(open: (peer: string) => void = () => undefined): ChannelPort<WebSocket> {
  return {
    write(ws, message) {
      try {
        ws.send(encodeLink(message));
        return true;
      } catch {
        return false;
      }
    },
    close: (ws, reason) => closeQuietly(ws, CLOSE.normal, reason),
    open,
  };
}
