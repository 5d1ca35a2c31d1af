// README.md states the limits a client meets as the code enforces them (issue 38, item 6: it said
// `413` over 4 MiB while both transports refuse past 1,047,552 bytes). Each number is read out of
// the README's own sentences and compared with the constant the gateway uses, and the switch that
// makes `npm start` print the gateway's log lines is the one scripts/start.ts reads.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_STREAM_LIMITS } from "../../durable-objects/connection/outbound-stream";
import { MAX_FRAME_BYTES, parseFrame } from "../../protocol/jsonrpc";
import { MAX_JSON_DEPTH } from "../../protocol/limits";
import { WEBSOCKET_RETENTION } from "../../protocol/stream-ring";
import { ROOT } from "../../scripts/local-gateway";

const readme = readFileSync(join(ROOT, "README.md"), "utf8").replace(/\s+/g, " ");
const number = (text: string) => Number(text.replace(/,/g, ""));

/** Every match of the pattern's first group, as numbers; fails when the README says it nowhere. */
function stated(pattern: RegExp): number[] {
  const found = [...readme.matchAll(pattern)].map((m) => number(m[1]!));
  expect(found.length, `README.md states ${pattern}`).toBeGreaterThan(0);
  return found;
}

describe("README.md's limits are the code's", () => {
  it("one message's size: the `413` status and the limits paragraph give the frame limit both transports use", () => {
    for (const bytes of stated(/`413` over ([\d,]+) bytes/g)) expect(bytes).toBe(MAX_FRAME_BYTES);
    for (const bytes of stated(/One message is at most ([\d,]+) bytes/g)) expect(bytes).toBe(MAX_FRAME_BYTES);
    expect(/`413` over \d+ [KMG]iB/.exec(readme)?.[0], "a 413 stated in MiB").toBeUndefined();
    // The limit is where the parser draws it: one byte over is refused, the limit itself is not.
    const frame = (bytes: number) => {
      const empty = `{"jsonrpc":"2.0","method":"x","params":{"p":""}}`;
      return `{"jsonrpc":"2.0","method":"x","params":{"p":"${"a".repeat(bytes - empty.length)}"}}`;
    };
    expect(frame(MAX_FRAME_BYTES).length).toBe(MAX_FRAME_BYTES);
    expect(parseFrame(frame(MAX_FRAME_BYTES)).ok).toBe(true);
    expect(parseFrame(frame(MAX_FRAME_BYTES + 1)).ok).toBe(false);
  });

  it("nesting depth", () => {
    for (const levels of stated(/nests at most (\d+) levels/g)) expect(levels).toBe(MAX_JSON_DEPTH);
  });

  it("a Streamable HTTP session stream nobody reads: its window, messages and bytes", () => {
    const [seconds] = stated(/A session's stream that nobody reads for (\d+) s/g);
    expect(seconds! * 1000).toBe(DEFAULT_STREAM_LIMITS.windowMs);
    for (const messages of stated(/holds (\d+) messages \/ \d+ MiB unread/g)) expect(messages).toBe(DEFAULT_STREAM_LIMITS.maxMessages);
    for (const mib of stated(/holds \d+ messages \/ (\d+) MiB unread/g)) expect(mib * 2 ** 20).toBe(DEFAULT_STREAM_LIMITS.maxBytes);
  });

  it("resumable streams: the retention each transport keeps, as initialize advertises it", () => {
    for (const messages of stated(/Retention: the last (\d+) messages \(and \d+ MiB\) for \d+ s/g))
      expect(messages).toBe(DEFAULT_STREAM_LIMITS.maxMessages);
    for (const mib of stated(/Retention: the last \d+ messages \(and (\d+) MiB\)/g))
      expect(mib * 2 ** 20).toBe(DEFAULT_STREAM_LIMITS.maxBytes);
    for (const seconds of stated(/Retention: the last \d+ messages \(and \d+ MiB\) for (\d+) s/g))
      expect(seconds * 1000).toBe(DEFAULT_STREAM_LIMITS.windowMs);
    for (const messages of stated(/Retention: (\d+) messages \(and \d+ MiB\) per session/g))
      expect(messages).toBe(WEBSOCKET_RETENTION.messages);
    for (const mib of stated(/Retention: \d+ messages \(and (\d+) MiB\) per session/g))
      expect(mib * 2 ** 20).toBe(WEBSOCKET_RETENTION.bytes);
    for (const seconds of stated(/per session for (\d+) s after the drop/g)) expect(seconds).toBe(WEBSOCKET_RETENTION.seconds);
  });

  it("the gateway's log lines: README names the variable npm start reads", () => {
    const start = readFileSync(join(ROOT, "scripts", "start.ts"), "utf8");
    const variable = /process\.env\.(ACP_GATEWAY_\w+) !== "1"/.exec(start)?.[1];
    expect(variable).toBe("ACP_GATEWAY_VERBOSE");
    expect(readme.includes(`${variable}=1 npm start`), `README.md names ${variable}=1 npm start`).toBe(true);
    expect(readme.includes("log lines print either way"), "README.md says the log lines print without it").toBe(false);
  });
});
