import { describe, expect, it } from "vitest";
import { REWRITE_MARK } from "../../protocol/session-wire";
import { StreamRing } from "../../protocol/stream-ring";

const random = (bytes: Uint8Array) => crypto.getRandomValues(bytes);
const cursorOf = (frame: string): string =>
  (JSON.parse(frame.replace(REWRITE_MARK, "")) as { params: { _meta: { "acp/cursor": string } } }).params._meta["acp/cursor"];
const update = (n: number) => `{"jsonrpc":"2.0","method":"session/update","params":{"n":${n}}}`;

describe("a WebSocket's session stream (StreamRing)", () => {
  it("replays the frames after a cursor exactly as they were sent, marks and cursors included", () => {
    const ring = new StreamRing(random);
    const sent = [
      ring.stamp(update(1)),
      ring.stamp(`${REWRITE_MARK}{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{}}`),
      ring.stamp(update(3)),
    ];
    const first = sent[0] ?? "";
    const after = ring.after(cursorOf(first));
    expect(after).toEqual({ ok: true, frames: sent.slice(1) });
    expect(sent[1]?.startsWith(REWRITE_MARK)).toBe(true);
    expect(ring.after(cursorOf(sent[2] ?? ""))).toEqual({ ok: true, frames: [] });
  });

  it("refuses another ring's cursor and one past its end as unknown, one it let go of as expired", () => {
    const ring = new StreamRing(random, { messages: 2, bytes: 1 << 20 });
    const other = new StreamRing(random);
    const first = ring.stamp(update(1)) ?? "";
    ring.stamp(update(2));
    ring.stamp(update(3));
    // Holding 2 and 3, the ring can still give everything after 1; with 4 it let 2 go.
    expect(ring.after(cursorOf(first))).toMatchObject({ ok: true });
    const last = ring.stamp(update(4)) ?? "";
    expect(ring.after(cursorOf(other.stamp(update(1)) ?? ""))).toEqual({ ok: false, reason: "unknown_cursor" });
    expect(ring.after(cursorOf(first))).toEqual({ ok: false, reason: "expired_cursor" });
    expect(ring.after(`${cursorOf(last).split(".")[0] ?? ""}.z`)).toEqual({ ok: false, reason: "unknown_cursor" });
  });

  it("while re-sending what waits on the client, a request the stream carried already is skipped; others go", () => {
    const ring = new StreamRing(random);
    const ask = (id: number) => `${REWRITE_MARK}{"jsonrpc":"2.0","id":${id},"method":"session/request_permission","params":{}}`;
    ring.stamp(ask(1));
    const resent: (string | undefined)[] = [];
    ring.withoutRepeats(() => resent.push(ring.stamp(ask(1)), ring.stamp(ask(2))));
    expect(resent[0]).toBeUndefined();
    expect(resent[1]).toContain('"id":2');
    expect(ring.stamp(ask(1))).toBeDefined();
  });

  it("re-sending after a resume from a cursor, only the requests the replay carries are skipped: one sent before the cursor goes again", () => {
    const ring = new StreamRing(random);
    const ask = (id: number) => `${REWRITE_MARK}{"jsonrpc":"2.0","id":${id},"method":"session/request_permission","params":{}}`;
    ring.stamp(ask(1));
    const seen = ring.stamp(update(1)) ?? "";
    ring.stamp(ask(2));
    const resent: (string | undefined)[] = [];
    ring.withoutRepeats(() => resent.push(ring.stamp(ask(1)), ring.stamp(ask(2))), cursorOf(seen));
    expect(resent[0]).toContain('"id":1');
    expect(resent[1]).toBeUndefined();
  });
});
