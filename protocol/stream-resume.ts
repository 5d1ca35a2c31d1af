// `stream/resume`'s params (the draft RFD, decision 0050): a new WebSocket's first frame naming the
// dropped connection and, per session, the last cursor its client processed. Read and bounded here,
// before any session is asked; connection/session-sockets.ts resumes each stream.

import { isObject } from "./jsonrpc";

/** Sessions one `stream/resume` may name. */
const MAX_RESUMED_STREAMS = 64;
const CONNECTION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A `stream/resume` as read: the dropped connection's id, and each session's cursor. */
export interface ResumeRequest {
  connectionId: string;
  streams: Record<string, string>;
}

/** `stream/resume`'s params, or what is wrong with them. */
export function resumeRequest(params: unknown): ResumeRequest | string {
  if (!isObject(params) || typeof params.connectionId !== "string" || !CONNECTION_ID.test(params.connectionId)) {
    return "stream/resume needs params.connectionId: the Acp-Connection-Id of the dropped connection";
  }
  const streams = params.streams;
  if (!isObject(streams) || Object.keys(streams).length === 0 || Object.keys(streams).length > MAX_RESUMED_STREAMS) {
    return `stream/resume needs params.streams: {sessionId: cursor}, 1 to ${MAX_RESUMED_STREAMS} sessions`;
  }
  const cursors: Record<string, string> = {};
  for (const [sessionId, cursor] of Object.entries(streams)) {
    if (typeof cursor !== "string")
      return `stream/resume: the cursor of session ${sessionId} must be a string (the last _meta["acp/cursor"] seen)`;
    cursors[sessionId] = cursor;
  }
  return { connectionId: params.connectionId, streams: cursors };
}
