// The wire between the edge Worker and a SessionObject: how a client connection attaches to a
// session (one WebSocket per connection and session, described by one header), and how the frames
// the session sends on it are marked so the edge parses only what it must rewrite.
// Pure: no Cloudflare imports (the sockets are in durable-objects/session/clients.ts and
// connection/session-sockets.ts); unit-tested in test/unit/session-wire.test.ts.

import type { Role } from "../core/principal";
import type { AttachRole, AttachedAs, HistoryPolicy } from "./session-attach";
import { TEXT_SEPARATOR, WIRE_MARK } from "./wire-marks";

/** The header the edge uses to describe the connection it attaches (JSON of an AttachRequest). */
export const ATTACH_HEADER = "X-Acp-Gateway-Attach";

/** What the session knows of one attached client connection; kept in the socket's attachment (under 2 KB). */
export interface ClientAttachment {
  /** The edge connection id (Acp-Connection-Id). */
  connId: string;
  keyId: string;
  /** The key's user label: who is behind this client. */
  user: string | null;
  /** The person behind the client, as their provider names them (decision 0025); absent for an unnamed key. */
  person?: { issuer: string; subject: string };
  /**
   * What the client may do (decision 0028), as the edge computed it when it attached; the edge closes
   * the connection (4403) when it changes. Absent only on sockets attached before roles existed: read
   * as `approver`, what every client key could do then.
   */
  role?: Role;
  /** What the client advertised in initialize: whether it can serve fs, terminal and elicitation requests, and show ACP `notice` updates. */
  caps: {
    readTextFile: boolean;
    writeTextFile: boolean;
    terminal: boolean;
    elicitationForm?: boolean;
    elicitationUrl?: boolean;
    notices?: boolean;
  };
  attachedAt: number;
  /** Set when the client came by `session/attach` (decision 0054): who it said it is; it is sent the PR's updates. */
  attachedAs?: AttachedAs;
}

export interface AttachRequest {
  tenantId: string;
  sessionId: string;
  client: ClientAttachment;
  /**
   * replay: history then live; load: history, the session/load answer, then live; live: live only;
   * resume: the connection's dropped stream after `resumeFrom` (a cursor), `stream/resumed`, then live (decision 0050);
   * attach: `session/attach` (decision 0054): history as `attach.historyPolicy` says, the answer, the waiting requests unless `none`, then live.
   */
  mode: "replay" | "load" | "live" | "resume" | "attach";
  /** The id of the session/load or session/attach request the session answers. */
  loadRequestId?: string | number;
  attach?: { historyPolicy: HistoryPolicy; role: AttachRole; afterMessageId?: string };
  resumeFrom?: string;
}

/** On a resume refused (409), why (protocol/stream-cursor.ts `ResumeRefusal`). */
export const RESUME_REFUSED_HEADER = "X-Acp-Gateway-Resume-Refused";
/** On a resume accepted (101), the capabilities the client advertised when it first attached (JSON of ClientAttachment["caps"]). */
export const RESUMED_CAPS_HEADER = "X-Acp-Gateway-Resumed-Caps";

/** The attach header's value, as the session reads it (null when it is missing). */
export function attachRequestOf(header: string | null): AttachRequest | null {
  return JSON.parse(header ?? "null") as AttachRequest | null;
}

/**
 * Frames that carry an id of the session's own (requests to a client, `$/cancel_request` naming one,
 * an error whose `data.requestId` names one) start with this mark, so the edge parses and rewrites
 * only those into the connection's id space (protocol/connection-ids.ts) and passes every other
 * frame (updates, responses) on untouched, without parsing it.
 */
export const REWRITE_MARK = WIRE_MARK.rewrite;

/**
 * Replay goes to the edge in packs: one frame holding many logged messages, separated by NUL (which
 * JSON text never contains), so a long history costs the edge a few events instead of one per
 * message. The edge unpacks and sends each message to the client as its own frame.
 */
export const PACK_MARK = WIRE_MARK.pack;
export const PACK_SEPARATOR = TEXT_SEPARATOR;
/**
 * A replayed message that cannot go in a pack (it holds a NUL, or starts with a mark: never so for
 * JSON text, which is all the log holds) goes alone behind this mark and reaches the client verbatim.
 */
export const VERBATIM_MARK = WIRE_MARK.verbatim;

/** A pack is closed once its messages reach this many characters. */
const PACK_CHARS = 512 * 1024;

/** A frame the edge will rewrite into the connection's id space. */
export function rewritable(text: string): string {
  return REWRITE_MARK + text;
}

/** The frames that carry `bodies` to the edge, in order, packed up to `packChars` characters a pack. */
export function* packFrames(bodies: Iterable<string>, packChars = PACK_CHARS): Generator<string> {
  let pack: string[] = [];
  let size = 0;
  for (const body of bodies) {
    if (!packable(body)) {
      if (pack.length > 0) yield PACK_MARK + pack.join(PACK_SEPARATOR);
      pack = [];
      size = 0;
      yield VERBATIM_MARK + body;
      continue;
    }
    pack.push(body);
    size += body.length;
    if (size >= packChars) {
      yield PACK_MARK + pack.join(PACK_SEPARATOR);
      pack = [];
      size = 0;
    }
  }
  if (pack.length > 0) yield PACK_MARK + pack.join(PACK_SEPARATOR);
}

function packable(body: string): boolean {
  return !body.includes(PACK_SEPARATOR) && !isMark(body.charAt(0));
}

function isMark(char: string): boolean {
  return char === REWRITE_MARK || char === PACK_MARK || char === VERBATIM_MARK;
}

/** One frame from a session, as the edge sees it. */
export type SessionFrame =
  /** Messages the client receives as they are, one frame each. */
  | { kind: "messages"; texts: string[] }
  /** One message to parse and rewrite into the connection's id space first. */
  | { kind: "rewrite"; text: string };

export function readSessionFrame(frame: string): SessionFrame {
  switch (frame.charAt(0)) {
    case PACK_MARK:
      return { kind: "messages", texts: frame.slice(PACK_MARK.length).split(PACK_SEPARATOR) };
    case VERBATIM_MARK:
      return { kind: "messages", texts: [frame.slice(VERBATIM_MARK.length)] };
    case REWRITE_MARK:
      return { kind: "rewrite", text: frame.slice(REWRITE_MARK.length) };
    default:
      return { kind: "messages", texts: [frame] };
  }
}
