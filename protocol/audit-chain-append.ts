// Appending to a tenant's audit hash chain when many writers write at once (decision 0035): group
// commit through the store, with no object in the way.
//
// Every writer first **stages** its entries (a plain insert, no race: staged rows are ordered by
// when they were staged). Then whoever chains, chains **everyone's** staged rows, oldest first, up to
// WINDOW per commit, with one conditional write that holds only if the chain's tip is still the one
// the links were computed from. So a thousand writers need about a thousand / WINDOW commits, not a
// thousand, and a writer that loses a round has usually been chained by the winner.
//
// Who chains (`ChainDrainer`, one per append):
// - A writer that has not committed reads the staged window only if one of its own rows is among
//   the HEAD oldest staged rows; otherwise it returns at once: the writers ahead of it chain its rows.
//   So at most HEAD writers (plus the drainer) read the window's text at a time, not every writer.
// - A writer that committed is the **drainer**: it reads again and chains again until it reads
//   nothing staged, or loses a round (then the one that won is the drainer), or has done
//   DRAIN_ROUNDS rounds.
//
// Guarantees (the model test, test/unit/audit-chain-append.test.ts, checks them):
// - **No fork, no gap, nothing twice**: a commit appends links seq tip+1… only if the tip is still
//   `tip` (the store checks it in the same transaction); an entry's digest is staged at most once
//   and never once it is chained.
// - **Nothing staged is left behind** when every writer has returned without crashing: the last
//   commit's writer reads again after it, and every row staged before that read is in it. A writer
//   that returns without chaining saw HEAD older staged rows, and whoever chains those reads again
//   after, and sees its rows. A writer that crashes mid-drain (or stops at DRAIN_ROUNDS) leaves rows
//   staged, not lost: the next append of the tenant, or the export (which drains first), chains them.

import { type ChainPoint, chainLinks } from "./audit-chain.ts";

/** A writer chains only if one of its rows is among this many oldest staged rows. */
export const HEAD = 8;
/** Links per commit. */
export const WINDOW = 200;
/** Commits one append makes at most before it returns (what is left stays staged for the next). */
export const DRAIN_ROUNDS = 64;

/** A staged row as read for chaining: its place in the queue and its entry's canonical JSON. */
export interface StagedRow {
  id: number;
  entry: string;
}

/** What a commit writes: for each staged row (by id), its seq, prev and hash. */
export interface PlannedLink {
  id: number;
  seq: number;
  prev: string;
  hash: string;
}

/** The links that chain `window` (oldest first) after `tip`. `entry` is canonical JSON, hashed as the object it is. */
function planLinks(tip: ChainPoint, tenantId: string, window: readonly StagedRow[]): PlannedLink[] {
  const links = chainLinks(
    tip,
    tenantId,
    window.map((w) => JSON.parse(w.entry) as object),
  );
  return links.map((l, i) => ({ id: (window[i] as StagedRow).id, seq: l.seq, prev: l.prev, hash: l.hash }));
}

/** What a read of the store asks for: the window's text for anyone (`drainer`) or only if mine is near the head. */
export interface ReadAsk {
  drainer: boolean;
}

export type Step = { kind: "done" } | { kind: "commit"; tip: ChainPoint; links: PlannedLink[] };

/** One append's decisions after its rows are staged: read, commit, read, … done. */
export class ChainDrainer {
  private commits = 0;

  /** `drainer`: chain whatever is staged from the start (the export's drain), not only near one's own rows. */
  constructor(
    private readonly tenantId: string,
    private drainer = false,
  ) {}

  /** What the next read asks for. */
  ask(): ReadAsk {
    return { drainer: this.drainer };
  }

  /**
   * After a read: the tip, and the staged window (empty when nothing is staged, or when this writer
   * is not the drainer and none of its rows is among the HEAD oldest).
   */
  read(tip: ChainPoint, window: readonly StagedRow[]): Step {
    if (window.length === 0) return { kind: "done" };
    return { kind: "commit", tip, links: planLinks(tip, this.tenantId, window) };
  }

  /** After a commit: whether to read again. A lost round hands the drain to the winner. */
  committed(won: boolean): boolean {
    if (!won) return false;
    this.drainer = true;
    this.commits++;
    return this.commits < DRAIN_ROUNDS;
  }
}
