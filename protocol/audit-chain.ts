// The tenant's audit hash chain (decision 0024): each link carries a per-tenant `seq` (1, 2, 3, …
// with no gap), the `prev` hash of link seq − 1 (GENESIS before the first) and its own `hash`, the
// SHA-256 (lower-case hex) of the link without its `hash` key in canonical JSON (RFC 8785, JCS:
// keys sorted by UTF-16 code units, no whitespace, strings as JSON.stringify writes them; the
// values here are only strings, safe integers, null and objects). A SIEM can check an export with
// any JCS library and SHA-256; `ChainVerifier` is ours, and `acp-gateway audit verify` runs it.
//
// Guarantees of the verifier, checked line by line: a line that is not a link, a missing seq (gap),
// a seq out of order or repeated, an edited line (its hash no longer matches its content), a broken
// link (prev is not the hash of the line before), a line of another tenant, a chain that does not
// start at the given anchor or does not end at the given end: each is reported with the line number
// of the first one, and nothing after it is judged.

import { sha256HexSync } from "./sha256.ts";
import type { ApiAuditEntry } from "./rest-api.ts";

/** `prev` of the first link of every tenant. */
export const GENESIS = "0".repeat(64);

/** JCS (RFC 8785) of a value made of strings, safe integers, booleans, null, arrays and plain objects. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new TypeError(`canonical JSON here holds only safe integers, not ${value}`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.some(([, v]) => v === undefined)) throw new TypeError("canonical JSON has no undefined values");
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  throw new TypeError(`canonical JSON cannot hold a ${typeof value}`);
}

/**
 * One audit row as the chain holds it: the shape `GET /v1/audit` shows (rest-api.ts), but for the
 * fields added since the chain began, which are left out when unset so older rows hash as they did.
 */
export interface ChainEntry extends Pick<
  ApiAuditEntry,
  "id" | "sessionId" | "agent" | "toolCallId" | "kind" | "name" | "operation" | "optionId" | "optionKind" | "at"
> {
  outcome: string;
  decidedBy: {
    type: string;
    key: string | null;
    user: string | null;
    ruleId: string | null;
    /** Present only when known (decision 0028): rows written before it hash as they did. */
    person?: { issuer: string; subject: string };
    role?: string;
    connectionId?: string;
  };
  /** The policy that applied (`four_eyes:…`), why an answer was refused, the earlier approvals: present only when set. */
  policy?: string;
  reason?: string;
  approvedBy?: unknown;
}

export interface ChainLink {
  seq: number;
  prev: string;
  hash: string;
  tenantId: string;
  entry: object;
}

/** Where a chain (or a piece of it) starts or ends: a seq and the hash of the link at it. */
export interface ChainPoint {
  seq: number;
  hash: string;
}

export const START: ChainPoint = { seq: 0, hash: GENESIS };

/** The hash of a link: SHA-256 of the canonical JSON of the link without its `hash` key. */
export function linkHash(link: Omit<ChainLink, "hash"> | Record<string, unknown>): string {
  const rest: Record<string, unknown> = { ...link };
  delete rest.hash;
  return sha256HexSync(canonicalJson(rest));
}

/** The links that append `entries` after `tip`, in order. */
export function chainLinks(tip: ChainPoint, tenantId: string, entries: readonly object[]): ChainLink[] {
  const links: ChainLink[] = [];
  let prev = tip;
  for (const entry of entries) {
    const body = { seq: prev.seq + 1, prev: prev.hash, tenantId, entry };
    const link = { ...body, hash: linkHash(body) };
    links.push(link);
    prev = link;
  }
  return links;
}

type FaultKind = "malformed" | "gap" | "reorder" | "edited" | "broken_link" | "tenant" | "start" | "end";

export interface ChainFault {
  kind: FaultKind;
  /** 1-based line of the input where the chain first fails. */
  line: number;
  message: string;
}

export type VerifyResult = { ok: true; links: number; last: ChainPoint; tenantId: string | undefined } | { ok: false; fault: ChainFault };

const HEX64 = /^[0-9a-f]{64}$/;

/** Parses a point written `SEQ:HASH` (or `SEQ` alone, for a start whose hash is not known). */
export function parsePoint(text: string): { seq: number; hash: string | undefined } | undefined {
  const m = /^(\d{1,15})(?::([0-9a-f]{64}))?$/.exec(text);
  if (!m) return undefined;
  const seq = Number(m[1]);
  return { seq, hash: seq === 0 ? GENESIS : m[2] };
}

/**
 * Checks an export one line at a time (`push`), then `finish`. `after`: where the export starts (the
 * last link the reader verified before, or START for a whole chain; a hash left undefined trusts the
 * first line's prev). `end`: where it must end (the export's `Acp-Audit-Chain-End` header), which is
 * what makes a cut-off tail visible.
 */
export class ChainVerifier {
  private line = 0;
  private expected: number;
  private prevHash: string | undefined;
  private tenantId: string | undefined;
  private links = 0;
  private fault: ChainFault | undefined;
  /** A seq past the expected one was met: is the expected one later (a reorder) or nowhere (a gap)? */
  private skipped: { line: number; expected: number; found: number; foundAt?: number } | undefined;
  private readonly end: ChainPoint | undefined;

  constructor(after: { seq: number; hash: string | undefined } = START, end?: ChainPoint) {
    this.end = end;
    this.expected = after.seq + 1;
    this.prevHash = after.hash;
  }

  push(text: string): void {
    this.line += 1;
    if (this.skipped) {
      if (this.skipped.foundAt === undefined && seqOf(text) === this.skipped.expected) this.skipped.foundAt = this.line;
      return;
    }
    if (this.fault) return;
    const fail = (kind: FaultKind, message: string) => {
      this.fault = { kind, line: this.line, message };
    };
    let link: unknown;
    try {
      link = JSON.parse(text);
    } catch {
      return fail("malformed", "not JSON");
    }
    if (!isLink(link))
      return fail(
        "malformed",
        "not a chain link: expected seq (a whole number ≥ 1), prev and hash (64 hex digits), tenantId, entry (an object)",
      );
    if (link.seq > this.expected) {
      this.skipped = { line: this.line, expected: this.expected, found: link.seq };
      return;
    }
    if (link.seq < this.expected) return fail("reorder", `seq ${link.seq} where seq ${this.expected} was due: out of order or repeated`);
    if (this.tenantId !== undefined && link.tenantId !== this.tenantId)
      return fail("tenant", `tenant ${JSON.stringify(link.tenantId)} in a chain of tenant ${JSON.stringify(this.tenantId)}`);
    let hash: string;
    try {
      hash = linkHash(link);
    } catch (error) {
      return fail("malformed", error instanceof Error ? error.message : String(error));
    }
    if (hash !== link.hash) return fail("edited", `seq ${link.seq}: its hash does not match its content (the content hashes to ${hash})`);
    if (this.prevHash !== undefined && link.prev !== this.prevHash) {
      const kind = this.links === 0 ? "start" : "broken_link";
      return fail(kind, `seq ${link.seq}: prev ${link.prev} is not the hash of seq ${link.seq - 1} (${this.prevHash})`);
    }
    this.tenantId = link.tenantId;
    this.prevHash = link.hash;
    this.expected = link.seq + 1;
    this.links += 1;
  }

  finish(): VerifyResult {
    if (this.skipped) {
      const s = this.skipped;
      return s.foundAt !== undefined
        ? {
            ok: false,
            fault: {
              kind: "reorder",
              line: s.line,
              message: `seq ${s.found} where seq ${s.expected} was due; seq ${s.expected} is at line ${s.foundAt}`,
            },
          }
        : {
            ok: false,
            fault: {
              kind: "gap",
              line: s.line,
              message: `seq ${s.expected}${s.found - 1 > s.expected ? `–${s.found - 1}` : ""} missing before seq ${s.found}`,
            },
          };
    }
    if (this.fault) return { ok: false, fault: this.fault };
    const last = { seq: this.expected - 1, hash: this.prevHash ?? "" };
    if (this.end && (this.end.seq !== last.seq || this.end.hash !== last.hash))
      return {
        ok: false,
        fault: {
          kind: "end",
          line: this.line + 1,
          message: `the input ends at seq ${last.seq}; the export ends at seq ${this.end.seq} (${this.end.hash}): ${this.end.seq > last.seq ? "lines are missing at the end" : "it does not end where the export said"}`,
        },
      };
    return { ok: true, links: this.links, last, tenantId: this.tenantId };
  }
}

/** Verifies a whole export held as lines (a trailing empty line, from the last newline, is not a line). */
export function verifyChain(lines: readonly string[], after?: { seq: number; hash: string | undefined }, end?: ChainPoint): VerifyResult {
  const verifier = new ChainVerifier(after, end);
  const body = lines.at(-1) === "" ? lines.slice(0, -1) : lines;
  for (const line of body) verifier.push(line);
  return verifier.finish();
}

function isLink(v: unknown): v is ChainLink {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const l = v as Record<string, unknown>;
  return (
    typeof l.seq === "number" &&
    Number.isSafeInteger(l.seq) &&
    l.seq >= 1 &&
    typeof l.prev === "string" &&
    HEX64.test(l.prev) &&
    typeof l.hash === "string" &&
    HEX64.test(l.hash) &&
    typeof l.tenantId === "string" &&
    typeof l.entry === "object" &&
    l.entry !== null &&
    !Array.isArray(l.entry)
  );
}

/** The seq of a line, when it has one: enough to find where a skipped link went. */
function seqOf(text: string): number | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && typeof (v as { seq?: unknown }).seq === "number" ? (v as { seq: number }).seq : undefined;
  } catch {
    return undefined;
  }
}
