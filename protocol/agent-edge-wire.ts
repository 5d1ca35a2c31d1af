// The wire between the edge's end of a dial-in agent's connection (worker/agent-connection.ts) and
// the AgentObject. The edge terminates the agent's WebSocket and opens one to the AgentObject, the
// control socket, which the AgentObject takes as the agent's own: frames pass on it as they are,
// both ways. A few carry a header in front, framed as every object-to-object message is
// (object-frame.ts), behind CONTROL_MARK (a byte JSON text never starts with):
// - edge → AgentObject, `attributed`: an agent frame the edge counts as a session's (`s`), with its
//   running count of such frames for that session (`c`); `handover`: frames the edge had already
//   numbered for the session and could not deliver itself (`seqs`, one per text), in order.
// - AgentObject → edge, `epoch`: the connection's epoch, first on the socket (a session's answer on
//   an edge link names the epoch of the request it answers); `request`: a session's request for the
//   agent under its agent-side id, so the edge knows whose its answer is; `answer`: a session's
//   answer to the agent's request `id` that came through the AgentObject (the edge sends each
//   request one answer, whichever way it came: protocol/edge-routing.ts `EdgeAnswers`); `grant`:
//   everything the edge sent for session `s`, up to its count `c`, has been applied, and the edge
//   may deliver the session's notifications itself, numbered from `from` up to (not including) `to`,
//   on connection `epoch`.
// Why the counts and numbers: a session's frames must be applied in the order the agent sent them,
// and each once; see docs/decisions/0001-the-message-path.md, "The stream at the edge".
// Pure: no Cloudflare imports; unit-tested in test/unit/agent-edge-wire.test.ts.

import { type JsonRpcId, isId } from "./jsonrpc";
import { decodeFrame, encodeFrame, textsOf } from "./object-frame";
import { WIRE_MARK } from "./wire-marks";
/** The header on the control socket's upgrade that marks it as the edge's (value "1"). */
export const AGENT_EDGE_HEADER = "X-Acp-Gateway-Agent-Edge";
/** The header the edge opens a session link with (value: the agent's name), beside AGENT_LINK_HEADER's. */
export const EDGE_LINK_HEADER = "X-Acp-Gateway-Edge-Link";

/** Opens a framed message on the control socket (wire-marks.ts: no other wire's mark). */
export const CONTROL_MARK = WIRE_MARK.control;

export type EdgeToAgentObject =
  { t: "attributed"; s: string; c: number; text: string } | { t: "handover"; s: string; c: number; seqs: number[]; texts: string[] };

export type AgentObjectToEdge =
  | { t: "epoch"; epoch: number }
  | { t: "request"; s: string; id: number; text: string }
  | { t: "answer"; s: string; id: JsonRpcId; text: string }
  | { t: "grant"; s: string; c: number; from: number; to: number; epoch: number };

export function encodeControl(message: EdgeToAgentObject | AgentObjectToEdge): string {
  switch (message.t) {
    case "attributed":
      return encodeFrame({ t: message.t, s: message.s, c: message.c }, message.text, CONTROL_MARK);
    case "handover":
      return encodeFrame({ t: message.t, s: message.s, c: message.c, seqs: message.seqs }, message.texts, CONTROL_MARK);
    case "request":
    case "answer":
      return encodeFrame({ t: message.t, s: message.s, id: message.id }, message.text, CONTROL_MARK);
    case "epoch":
    case "grant":
      return encodeFrame(message, undefined, CONTROL_MARK);
  }
}

/** A frame on the control socket: a plain one (the text itself), or one with a header; undefined if a header is malformed. */
export function decodeControl(text: string): { t: "plain"; text: string } | EdgeToAgentObject | AgentObjectToEdge | undefined {
  if (!text.startsWith(CONTROL_MARK)) return { t: "plain", text };
  const frame = decodeFrame(text, CONTROL_MARK);
  if (!frame) return undefined;
  const { header, body } = frame;
  if (header.t === "epoch") return isCount(header.epoch) && body === undefined ? { t: "epoch", epoch: header.epoch } : undefined;
  const s = header.s;
  if (typeof header.t !== "string" || typeof s !== "string") return undefined;
  switch (header.t) {
    case "attributed":
      return isCount(header.c) && body !== undefined ? { t: "attributed", s, c: header.c, text: body } : undefined;
    case "handover": {
      const seqs = header.seqs;
      if (!isCount(header.c) || body === undefined || !Array.isArray(seqs) || !seqs.every(isCount)) return undefined;
      const texts = textsOf(body, seqs.length);
      return texts ? { t: "handover", s, c: header.c, seqs, texts } : undefined;
    }
    case "request":
      return isCount(header.id) && body !== undefined ? { t: "request", s, id: header.id, text: body } : undefined;
    case "answer":
      return isId(header.id) && body !== undefined ? { t: "answer", s, id: header.id, text: body } : undefined;
    case "grant": {
      const { c, from, to, epoch } = header;
      if (!isCount(c) || !isCount(from) || !isCount(to) || !isCount(epoch) || to <= from) return undefined;
      return { t: "grant", s, c, from, to, epoch };
    }
  }
  return undefined;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
