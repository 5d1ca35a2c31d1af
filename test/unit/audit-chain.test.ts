// The audit hash chain's verifier (protocol/audit-chain.ts, decision 0024): a valid chain always
// verifies, and any single edit, deletion, insertion or swap of its lines is found, at its line.

import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ChainLink, GENESIS, START, canonicalJson, chainLinks, linkHash, verifyChain } from "../../protocol/audit-chain";

const RUNS = Number(process.env.FUZZ_RUNS ?? 500);

const text = fc.string({ unit: "grapheme", maxLength: 12 });
const entry = fc.record({
  id: text.map((s) => `aud_${s}`),
  sessionId: text,
  agent: text,
  toolCallId: fc.option(text),
  kind: fc.option(text),
  name: fc.option(text),
  operation: fc.option(fc.string({ unit: "binary", maxLength: 40 })),
  outcome: fc.constantFrom("selected", "cancelled", "withdrawn"),
  optionId: fc.option(text),
  optionKind: fc.option(text),
  decidedBy: fc.record({
    type: fc.constantFrom("person", "rule", "cancel"),
    key: fc.option(text),
    user: fc.option(text),
    ruleId: fc.option(text),
  }),
  at: fc.integer({ min: 0, max: 2 ** 45 }),
});
const chain = fc.array(entry, { minLength: 1, maxLength: 10 }).map((entries) => chainLinks(START, "ten_1", entries));

const lineOf = (l: ChainLink | Record<string, unknown>) => JSON.stringify(l);
const linesOf = (links: ChainLink[]) => links.map(lineOf);
const endOf = (links: ChainLink[]) => {
  const last = links.at(-1) as ChainLink;
  return { seq: last.seq, hash: last.hash };
};
const verify = (lines: string[], links: ChainLink[]) => verifyChain(lines, START, endOf(links));
const flipHex = (h: string) => (h[0] === "0" ? "1" : "0") + h.slice(1);

/** One edit of a link: of its content, its seq, its prev, its hash, its tenant, or a key added. */
const edits: ((l: ChainLink) => Record<string, unknown>)[] = [
  (l) => ({ ...l, entry: { ...l.entry, operation: `${String((l.entry as { operation: unknown }).operation)}!` } }),
  (l) => ({ ...l, entry: { ...l.entry, at: (l.entry as { at: number }).at + 1 } }),
  (l) => ({ ...l, seq: l.seq + 1 }),
  (l) => ({ ...l, seq: Math.max(1, l.seq - 1) === l.seq ? l.seq + 2 : l.seq - 1 }),
  (l) => ({ ...l, prev: flipHex(l.prev) }),
  (l) => ({ ...l, hash: flipHex(l.hash) }),
  (l) => ({ ...l, tenantId: "ten_2" }),
  (l) => ({ ...l, note: "added" }),
];

describe("audit chain verifier", () => {
  it("a valid chain always verifies, ending at its last link", () => {
    fc.assert(
      fc.property(chain, (links) => {
        expect(verify(linesOf(links), links)).toEqual({ ok: true, links: links.length, last: endOf(links), tenantId: "ten_1" });
      }),
      { numRuns: RUNS },
    );
  });

  it("any single edit of a line is found at that line", () => {
    fc.assert(
      fc.property(chain, fc.nat(), fc.integer({ min: 0, max: edits.length - 1 }), (links, at, e) => {
        const i = at % links.length;
        const lines = linesOf(links);
        lines[i] = lineOf((edits[e] as (typeof edits)[number])(links[i] as ChainLink));
        const result = verify(lines, links);
        expect(result.ok).toBe(false);
        if (!result.ok) expect(result.fault.line).toBe(i + 1);
      }),
      { numRuns: RUNS },
    );
  });

  it("any single deletion is found at the line where the deleted one was", () => {
    fc.assert(
      fc.property(chain, fc.nat(), (links, at) => {
        const i = at % links.length;
        const lines = linesOf(links);
        lines.splice(i, 1);
        const result = verify(lines, links);
        expect(result.ok).toBe(false);
        if (!result.ok) {
          expect(result.fault.line).toBe(i + 1);
          expect(result.fault.kind).toBe(i === links.length - 1 ? "end" : "gap");
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("any single insertion — a copy of a line, or a new link hashed correctly — is found at it or the line after", () => {
    fc.assert(
      fc.property(
        chain,
        fc.nat(),
        fc.oneof(
          fc.nat().map((j) => ({ copy: j })),
          fc.record({ seq: fc.integer({ min: 1, max: 12 }), prevOf: fc.nat(), extra: entry }),
        ),
        (links, at, what) => {
          const i = at % (links.length + 1);
          let inserted: string;
          if ("copy" in what) inserted = lineOf(links[what.copy % links.length] as ChainLink);
          else {
            const prev =
              what.prevOf % (links.length + 1) === 0 ? GENESIS : (links[(what.prevOf % (links.length + 1)) - 1] as ChainLink).hash;
            const body = { seq: what.seq, prev, tenantId: "ten_1", entry: what.extra };
            inserted = lineOf({ ...body, hash: linkHash(body) });
          }
          const lines = linesOf(links);
          lines.splice(i, 0, inserted);
          const result = verify(lines, links);
          expect(result.ok).toBe(false);
          if (!result.ok) expect([i + 1, i + 2]).toContain(result.fault.line);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("any swap of two lines is found at the first of them, as a reorder", () => {
    fc.assert(
      fc.property(
        chain.filter((l) => l.length >= 2),
        fc.nat(),
        fc.nat(),
        (links, a, b) => {
          const i = a % links.length;
          const j = b % links.length;
          fc.pre(i !== j);
          const [lo, hi] = i < j ? [i, j] : [j, i];
          const lines = linesOf(links);
          [lines[lo], lines[hi]] = [lines[hi] as string, lines[lo] as string];
          const result = verify(lines, links);
          expect(result).toMatchObject({ ok: false, fault: { line: lo + 1, kind: "reorder" } });
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("a piece of a chain verifies after its anchor, and not after another", () => {
    fc.assert(
      fc.property(
        chain.filter((l) => l.length >= 2),
        fc.nat(),
        (links, at) => {
          const k = 1 + (at % (links.length - 1));
          const anchor = links[k - 1] as ChainLink;
          const piece = linesOf(links.slice(k));
          expect(verifyChain(piece, { seq: anchor.seq, hash: anchor.hash }, endOf(links)).ok).toBe(true);
          expect(verifyChain(piece, { seq: anchor.seq, hash: flipHex(anchor.hash) }, endOf(links))).toMatchObject({
            ok: false,
            fault: { line: 1, kind: "start" },
          });
          // Verified from the start of the chain, the piece is missing its head.
          expect(verifyChain(piece, START, endOf(links))).toMatchObject({ ok: false, fault: { line: 1, kind: "gap" } });
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("the documented form, computed without our code (sorted keys, no spaces, SHA-256 hex), is what the verifier checks", () => {
    const e = {
      id: "aud_1",
      sessionId: "s1",
      agent: "a",
      toolCallId: null,
      kind: "execute",
      name: "Run",
      operation: 'rm -rf "/tmp/é" ␛\u001b[2K',
      outcome: "selected",
      optionId: "allow-once",
      optionKind: "allow_once",
      decidedBy: { type: "person", key: "key_1", user: "ana", ruleId: null },
      at: 1764806400000,
    };
    // RFC 8785 by hand: keys in code-unit order at every level; strings as JSON.stringify writes them.
    const entryJcs =
      `{"agent":"a","at":1764806400000,"decidedBy":{"key":"key_1","ruleId":null,"type":"person","user":"ana"},` +
      `"id":"aud_1","kind":"execute","name":"Run","operation":${JSON.stringify(e.operation)},"optionId":"allow-once",` +
      `"optionKind":"allow_once","outcome":"selected","sessionId":"s1","toolCallId":null}`;
    expect(canonicalJson(e)).toBe(entryJcs);
    const hash = createHash("sha256").update(`{"entry":${entryJcs},"prev":"${GENESIS}","seq":1,"tenantId":"ten_1"}`, "utf8").digest("hex");
    const line = `{"seq":1,"prev":"${GENESIS}","hash":"${hash}","tenantId":"ten_1","entry":${JSON.stringify(e)}}`;
    expect(chainLinks(START, "ten_1", [e])[0]?.hash).toBe(hash);
    expect(verifyChain([line], START, { seq: 1, hash })).toMatchObject({ ok: true, links: 1 });
  });

  it("says what is wrong with a line that is not a link", () => {
    expect(verifyChain(["not json"])).toMatchObject({ ok: false, fault: { line: 1, kind: "malformed" } });
    expect(verifyChain(['{"seq":1}'])).toMatchObject({ ok: false, fault: { line: 1, kind: "malformed" } });
    expect(verifyChain(["", ""])).toMatchObject({ ok: false, fault: { line: 1, kind: "malformed" } });
  });
});
