// Every WebSocket close code the gateway sends or acts on, in one place: the edge, the objects, the
// CLI and the console read the same names. 1000–1015 are the protocol's (RFC 6455); 4000–4999 are
// the application's, and the edge passes those on to an agent unchanged (worker/agent-connection.ts).

export const CLOSE = {
  /** The normal end: a client or a bridge stopped, a link was no longer needed. */
  normal: 1000,
  /** The peer broke the protocol: the first message on /acp was not `initialize`. */
  protocolError: 1002,
  /** Closed without a status (what workerd reports; never sent: answered with `normal`). */
  noStatus: 1005,
  /** The peer's side failed (an error event on its socket): what the other side of the relay is told. */
  internalError: 1011,
  /** The gateway's side restarted (a session's or the agent connection's object): reconnect and session/load. */
  serviceRestart: 1012,
  /** The key could not be re-checked for the grace period (D1 unavailable): reconnect later. */
  tryAgainLater: 1013,
  /** A newer connection of the same agent took over. */
  replaced: 4000,
  /** The client let go of a session on purpose (session/detach, a new attach or load of it, its HTTP connection ended): no stream is kept for a resume. */
  detached: 4001,
  /** The key was revoked or expired, or the tenant disabled. */
  credentialsRevoked: 4401,
  /** The caller's role changed (a key's, or a person's through the tenant's group mapping): reconnect to act with the new one. */
  roleChanged: 4403,
  /** The session was deleted (session/delete): detach from it, the connection stays. */
  sessionDeleted: 4404,
  /** The peer kept sending over its message rate. */
  rateExceeded: 4429,
} as const;

/** Whether a close code is the application's own (4000–4999): passed on as it is. */
export function isApplicationCloseCode(code: number): boolean {
  return code >= 4000 && code <= 4999;
}

/**
 * Closes a socket (or anything closed by code and reason) that may be closing or closed already, when
 * that is fine: close() throws then, and its close event, or the one before, follows either way.
 */
export function closeQuietly(socket: { close(code: number, reason: string): void }, code: number, reason: string): void {
  try {
    socket.close(code, reason);
  } catch {
    // already closing or closed
  }
}
