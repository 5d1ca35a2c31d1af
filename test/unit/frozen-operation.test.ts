// The frozen operation's digest (protocol/frozen-operation.ts, decision 0040): it moves with exactly
// what the agent acts on — kind, name, rawInput, location paths, diffs — and with nothing else
// (status, rawOutput, title, text content, key order); and when raw input counts as missing.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { changedFields, freezeOperation, operationHash, rawInputMissing } from "../../protocol/frozen-operation";

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const base = {
  toolCallId: "c1",
  kind: "execute",
  title: "Run",
  status: "pending",
  rawInput: { command: "git status", cwd: "/w" },
  locations: [{ path: "/w/a", line: 3 }],
  content: [{ type: "diff", path: "/w/a", oldText: "x", newText: "y" }],
};

/** The same object with its keys in another order, at every depth. */
function shuffled(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v) => shuffled(v, seed));
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value as Record<string, unknown>);
  const order = entries.map((e, i) => ({ e, k: (i * 7919 + seed) % 101 })).sort((a, b) => a.k - b.k);
  return Object.fromEntries(order.map(({ e: [k, v] }) => [k, shuffled(v, seed)]));
}

describe("the frozen operation's digest", () => {
  it("does not move with key order, status, rawOutput, title, a location's line or text content", () => {
    fc.assert(
      fc.property(fc.nat(), fc.string(), fc.jsonValue(), fc.nat(), (seed, title, rawOutput, line) => {
        const other = {
          ...(shuffled(base, seed) as Record<string, unknown>),
          title,
          status: "in_progress",
          rawOutput,
          locations: [{ path: "/w/a", line }],
          content: [...base.content, { type: "content", content: { type: "text", text: title } }],
        };
        expect(operationHash(other)).toBe(operationHash(base));
        expect(changedFields(base, other)).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });

  it("moves with the kind, the name, the raw input, a location's path and a diff, and names the field", () => {
    const cases: [string, Record<string, unknown>][] = [
      ["kind", { kind: "edit" }],
      ["name", { name: "Bash" }],
      ["rawInput", { rawInput: { command: "git push --force origin main", cwd: "/w" } }],
      ["rawInput", { rawInput: { command: "git status", cwd: "/" } }],
      ["locations", { locations: [{ path: "/etc/shadow" }] }],
      ["content", { content: [{ type: "diff", path: "/w/a", oldText: "x", newText: "rm -rf /" }] }],
      ["content", { content: [{ type: "diff", path: "/w/Makefile", oldText: "x", newText: "y" }] }],
    ];
    for (const [field, change] of cases) {
      const other = { ...base, ...change };
      expect(operationHash(other), field).not.toBe(operationHash(base));
      expect(changedFields(base, other)).toEqual([field]);
    }
  });

  it("merges an update over the frozen operation as the session's table does: null and absent leave a field, arrays replace", () => {
    const frozen = freezeOperation(undefined, base);
    expect(freezeOperation(frozen.operation as never, { toolCallId: "c1", rawInput: null, status: "in_progress" }).operationHash).toBe(
      frozen.operationHash,
    );
    const changed = freezeOperation(frozen.operation as never, { toolCallId: "c1", rawInput: { command: "npm publish" } });
    expect(changed.operation.rawInput).toEqual({ command: "npm publish" });
    expect(changed.operationHash).not.toBe(frozen.operationHash);
  });
});

describe("raw input missing (ACP 1.9.1: explicit confirmation)", () => {
  it("is missing when the request's own tool call carries none, whatever the row says, or the operation has none", () => {
    const op = { rawInput: { command: "git status" } };
    expect(rawInputMissing({ toolCallId: "c1" }, op)).toBe(true);
    expect(rawInputMissing({ toolCallId: "c1", rawInput: null }, op)).toBe(true);
    expect(rawInputMissing(null, op)).toBe(true);
    expect(rawInputMissing({ rawInput: { command: "ls" } }, {})).toBe(true);
    expect(rawInputMissing({ rawInput: { command: "ls" } }, { rawInput: { command: "ls" } })).toBe(false);
    // A raw input that is a string, a number or an empty object is present: the rules judge it (and a closed world refuses what it cannot read).
    expect(rawInputMissing({ rawInput: "ls" }, { rawInput: "ls" })).toBe(false);
  });
});
