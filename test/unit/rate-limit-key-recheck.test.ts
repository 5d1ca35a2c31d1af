import { describe, expect, it } from "vitest";
import { KeyRecheck } from "../../connection/key-recheck";

describe("the key re-check of a live connection while D1 fails", () => {
  it("keeps the connection through failures shorter than the grace, then says it could not verify the key", () => {
    const check = new KeyRecheck(1000);
    expect(check.verdict({ ok: false }, 0)).toBe("keep");
    expect(check.verdict({ ok: false }, 999)).toBe("keep");
    expect(check.verdict({ ok: false }, 1000)).toBe("unverified");
  });

  it("starts the grace again after a successful check, and a revoked key is closed at once", () => {
    const check = new KeyRecheck(1000);
    expect(check.verdict({ ok: false }, 0)).toBe("keep");
    expect(check.verdict({ ok: true, valid: true }, 900)).toBe("keep");
    expect(check.verdict({ ok: false }, 1500)).toBe("keep");
    expect(check.verdict({ ok: false }, 2400)).toBe("keep");
    expect(check.verdict({ ok: true, valid: false }, 2500)).toBe("revoked");
  });
});
