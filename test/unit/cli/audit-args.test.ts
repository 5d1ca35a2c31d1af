// `acp-gateway audit verify`'s arguments: no gateway URL or key is needed, the anchors parse, and a
// wrong one is refused in words.

import { describe, expect, it } from "vitest";
import { UsageError, parseArgs } from "../../../cli/args";
import { GENESIS, START } from "../../../protocol/audit-chain";

const HASH = "ab".repeat(32);

describe("acp-gateway audit verify arguments", () => {
  it("needs only a file (or -): the whole chain from seq 1, no end", () => {
    expect(parseArgs(["audit", "verify", "export.ndjson"], {})).toEqual({
      command: "audit-verify",
      file: "export.ndjson",
      after: START,
      end: undefined,
    });
    expect(parseArgs(["audit", "verify", "-"], {})).toMatchObject({ file: "-" });
  });

  it("takes --after SEQ:HASH, --after SEQ (its hash trusted from the first line) and --end SEQ:HASH", () => {
    expect(parseArgs(["audit", "verify", `--after=7:${HASH}`, "--end", `9:${HASH}`, "f"], {})).toMatchObject({
      after: { seq: 7, hash: HASH },
      end: { seq: 9, hash: HASH },
    });
    expect(parseArgs(["audit", "verify", "--after", "7", "f"], {})).toMatchObject({ after: { seq: 7, hash: undefined } });
    expect(parseArgs(["audit", "verify", "--after", "0", "f"], {})).toMatchObject({ after: { seq: 0, hash: GENESIS } });
  });

  it("refuses a missing file, a bad anchor, an end without its hash and a second file, saying which", () => {
    const refused = (argv: string[]) => {
      try {
        parseArgs(argv, {});
      } catch (error) {
        if (error instanceof UsageError) return error.message;
        throw error;
      }
      return "accepted";
    };
    expect(refused(["audit", "verify"])).toMatch(/^no file/);
    expect(refused(["audit", "verify", "--after", "x:y", "f"])).toMatch(/^--after needs SEQ:HASH/);
    expect(refused(["audit", "verify", "--end", "9", "f"])).toMatch(/^--end needs SEQ:HASH/);
    expect(refused(["audit", "verify", "a", "b"])).toBe('one file at a time: "a", then "b"');
    expect(refused(["audit", "export"])).toMatch(/^unknown audit command "export"/);
  });
});
