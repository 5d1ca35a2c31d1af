// The ConnectionObject's RPC contract (connection-object.ts implements it; the edge's Streamable HTTP
// routes reach it through ../objects.ts): one Streamable HTTP client connection's requests, each
// with the principal the edge authenticated. A GET (an SSE stream) is its `fetch`.

import type { JsonRpcId } from "../../protocol/jsonrpc";
import type { LimitError } from "../../protocol/tenant-limits";
import type { Principal } from "../../core/principal";

/** What the edge read of a POSTed message (worker/http/streamable-http.ts) before handing it on. */
export interface PostedMessage {
  method?: string;
  id?: JsonRpcId;
  isRequest: boolean;
  /** The session it names (`Acp-Session-Id`, or `params.sessionId`); the edge routes by it. */
  sessionId?: string;
}

/** Header on the internal stream request (a GET, the object's `fetch`): the principal the edge authenticated. */
export const PRINCIPAL_HEADER = "X-Acp-Gateway-Principal";

export type InitializeOutcome = { status: 200; answer: string } | { status: 500; answer: string };
export type PostOutcome = { status: 202 } | { status: 409; message: string } | { status: 429; error: LimitError; retryAfterMs: number };
/** The connection is unknown, ended, or another key's. */
export type Unknown = { status: 404; message: string };

export interface ConnectionContract extends Rpc.DurableObjectBranded {
  /** Opens the connection: runs initialize and answers it. */
  initialize(principal: Principal, agent: string, connectionId: string, text: string, id: JsonRpcId): Promise<InitializeOutcome>;
  /** A POSTed message on the connection. */
  post(principal: Principal, text: string, message: PostedMessage, sessionId: string | undefined): Promise<PostOutcome | Unknown>;
  /** DELETE: ends the connection; answers once its key's slot is free. */
  end(principal: Principal): Promise<{ status: 202 } | Unknown>;
}
