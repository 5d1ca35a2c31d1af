// Group commit into a tenant's audit chain (protocol/audit-chain-append.ts, decision 0035), as a
// model: writers stage and drain against an in-memory store that applies each step atomically, as
// one D1 batch does (the same conditions as db/queries/audit-chain.ts's SQL), in every order
// fast-check's scheduler picks, some writers retrying a batch and some crashing at any step. The
// chain always verifies with no fork, gap or entry twice; nothing staged is left once every writer
// has returned; what a crash left is chained by the export's drain; and a writer near the head of
// the queue never needs more than a few commits.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ChainPoint, START, canonicalJson, verifyChain } from "../../protocol/audit-chain";
import { ChainDrainer, HEAD, type PlannedLink, type StagedRow, WINDOW } from "../../protocol/audit-chain-append";
import { sha256HexSync } from "../../protocol/sha256";

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const TENANT = "ten_model";

interface Link {
  seq: number;
  prev: string;
  hash: string;
  entry: string;
  digest: string;
}

/** D1 as the SQL uses it: a chain that only grows, a queue of staged rows, each call atomic. */
class Store {
  chain: Link[] = [];
  staged: { id: number; entry: string; digest: string }[] = [];
  private nextId = 1;
  commits = 0;

  private chained(digest: string) {
    return this.chain.some((l) => l.digest === digest);
  }
  /** STAGE: entries not chained and not staged, in order. */
  stage(entries: readonly string[]) {
    for (const entry of entries) {
      const digest = sha256HexSync(entry);
      if (this.chained(digest) || this.staged.some((s) => s.digest === digest)) continue;
      this.staged.push({ id: this.nextId++, entry, digest });
    }
  }
  /** TIP_READ + WINDOW_READ in one batch. */
  read(mine: readonly string[], drainer: boolean): { tip: ChainPoint; window: StagedRow[] } {
    const last = this.chain.at(-1);
    const tip = last ? { seq: last.seq, hash: last.hash } : START;
    const queue = this.staged.filter((s) => !this.chained(s.digest)).sort((a, b) => a.id - b.id);
    const head = this.staged
      .slice()
      .sort((a, b) => a.id - b.id)
      .slice(0, HEAD);
    const mayRead = drainer || head.some((h) => mine.includes(h.digest));
    return { tip, window: mayRead ? queue.slice(0, WINDOW).map((s) => ({ id: s.id, entry: s.entry })) : [] };
  }
  /** COMMIT + UNSTAGE in one batch: all or nothing. */
  commit(tipSeq: number, links: readonly PlannedLink[]): boolean {
    if ((this.chain.at(-1)?.seq ?? 0) !== tipSeq) return false;
    const rows = links.map((l) => this.staged.find((s) => s.id === l.id));
    if (rows.some((r) => r === undefined)) return false;
    links.forEach((l, i) => {
      const row = rows[i] as (typeof rows)[number] & object;
      if (this.chain.some((c) => c.seq === l.seq || c.digest === row.digest)) throw new Error("UNIQUE constraint failed");
      this.chain.push({ seq: l.seq, prev: l.prev, hash: l.hash, entry: row.entry, digest: row.digest });
    });
    this.staged = this.staged.filter((s) => !links.some((l) => l.id === s.id));
    this.commits++;
    return true;
  }
  lines(): string[] {
    return this.chain.map((l) => `{"seq":${l.seq},"prev":"${l.prev}","hash":"${l.hash}","tenantId":"${TENANT}","entry":${l.entry}}`);
  }
}

class Crash extends Error {}

/** One append: stage, then drain as ChainDrainer says. Every store call waits for the scheduler; `steps` left before a crash. */
async function append(store: Store, step: <T>(f: () => T) => Promise<T>, entries: string[], crashAfter: number, drainer = false) {
  let left = crashAfter;
  const at = async <T>(f: () => T): Promise<T> => {
    if (left-- <= 0) throw new Crash();
    return step(f);
  };
  const mine = entries.map(sha256HexSync);
  if (!drainer) await at(() => store.stage(entries));
  const turn = new ChainDrainer(TENANT, drainer);
  let reads = 0;
  for (;;) {
    const { tip, window } = await at(() => store.read(mine, turn.ask().drainer));
    reads++;
    const next = turn.read(tip, window);
    if (next.kind === "done") return reads;
    const won = await at(() => store.commit(next.tip.seq, next.links));
    if (!turn.committed(won)) return reads;
  }
}

const entryText = (w: number, k: number) => canonicalJson({ id: `aud_${w}_${k}`, sessionId: `s${w}`, at: k });

describe("group commit into the audit chain (model)", () => {
  it("writers staging and draining in any order, some retrying a batch, some crashing, leave one valid chain with every entry once; a crash's rows wait for the export's drain", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(
          fc.record({
            size: fc.integer({ min: 1, max: 4 }),
            retry: fc.boolean(),
            crashAfter: fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.integer({ min: 0, max: 4 })),
          }),
          { minLength: 1, maxLength: 24 },
        ),
        async (s, writers) => {
          const store = new Store();
          const step = <T>(f: () => T) => s.schedule(Promise.resolve()).then(f);
          const batches = writers.map((w, i) => Array.from({ length: w.size }, (_, k) => entryText(i, k)));
          const runs = writers.map(async (w, i) => {
            const batch = batches[i] as string[];
            try {
              await append(store, step, batch, w.crashAfter);
              // The outbox retrying after a lost answer: the same entries again add nothing.
              if (w.retry) await append(store, step, batch, Number.POSITIVE_INFINITY);
            } catch (e) {
              if (!(e instanceof Crash)) throw e;
            }
          });
          await s.waitFor(Promise.all(runs));

          const verified = verifyChain(store.lines(), START);
          expect(verified.ok).toBe(true);
          const digests = store.chain.map((l) => l.digest);
          expect(new Set(digests).size).toBe(digests.length);
          // Every writer that returned without crashing finds its entries chained: nothing left staged for it.
          const crashed = writers.some((w) => w.crashAfter !== Number.POSITIVE_INFINITY);
          if (!crashed) expect(store.staged).toEqual([]);
          // What crashes left staged, the export's drain chains; then every staged entry is in the chain once.
          const stagedBefore = store.staged.map((x) => x.digest);
          await s.waitFor(append(store, step, [], Number.POSITIVE_INFINITY, true));
          expect(store.staged).toEqual([]);
          for (const d of stagedBefore) expect(store.chain.some((l) => l.digest === d)).toBe(true);
          expect(verifyChain(store.lines(), START).ok).toBe(true);
          // Each entry of a writer that never crashed is in the chain.
          writers.forEach((w, i) => {
            if (w.crashAfter !== Number.POSITIVE_INFINITY) return;
            for (const e of batches[i] as string[]) expect(store.chain.some((l) => l.entry === e)).toBe(true);
          });
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("a thousand writers at once need about a thousand / WINDOW commits, and none reads the window unless near the head or draining", async () => {
    const store = new Store();
    let reads = 0;
    let windowReads = 0;
    const step = async <T>(f: () => T): Promise<T> => {
      await Promise.resolve();
      return f();
    };
    const N = 1000;
    // Every writer stages before any reads (the worst case: all arrive at once).
    for (let w = 0; w < N; w++) store.stage([entryText(w, 0)]);
    const counted = new Proxy(store, {
      get(target, prop) {
        if (prop === "read")
          return (mine: string[], drainer: boolean) => {
            const r = target.read(mine, drainer);
            reads++;
            if (r.window.length > 0) windowReads++;
            return r;
          };
        const v = Reflect.get(target, prop) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    await Promise.all(Array.from({ length: N }, (_, w) => append(counted, step, [entryText(w, 0)], Number.POSITIVE_INFINITY)));
    expect(store.chain).toHaveLength(N);
    expect(store.staged).toEqual([]);
    expect(store.commits).toBe(Math.ceil(N / WINDOW));
    // Reads with text: the HEAD writers of each commit and the drainer, not every writer each round.
    expect(windowReads).toBeLessThanOrEqual(Math.ceil(N / WINDOW) * (HEAD + 2));
    expect(reads).toBeLessThan(N + 2 * Math.ceil(N / WINDOW) * (HEAD + 2));
    expect(verifyChain(store.lines(), START).ok).toBe(true);
  });
});
