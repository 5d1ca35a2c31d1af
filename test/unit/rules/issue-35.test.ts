// Issue 35 for the rules engine: a tool's name is never a rule by itself, prefix rules apply only in
// the directory where they were approved (git only in the project's own repository), `make -j` only
// with a number. Every example of the issue that the engine decides is a named test, with variants.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type DerivedRule, type DeriveInput, type Rule, compileRules, decide, deriveRule, exactHash } from "../../../protocol/rules";

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const OPTIONS = [
  { optionId: "ao", name: "Allow once", kind: "allow_once" },
  { optionId: "aa", name: "Always allow", kind: "allow_always" },
  { optionId: "ro", name: "Reject once", kind: "reject_once" },
];
const PROJECT = "/srv/proj-a";
const judge = async (rules: Rule[], toolCall: Record<string, unknown>, cwd = PROJECT) =>
  decide(compileRules(rules), { toolCall, options: OPTIONS, cwd, agent: "demo", now: 1, exactHash: await exactHash(toolCall) }).decision;

async function derive(toolCall: Record<string, unknown>, over: Partial<DeriveInput> = {}) {
  return deriveRule({
    toolCall,
    optionKind: "allow_always",
    optionName: "Always allow",
    cwd: PROJECT,
    agent: "demo",
    exactHash: await exactHash(toolCall),
    ...over,
  });
}
async function remembered(toolCall: Record<string, unknown>, over: Partial<DeriveInput> = {}): Promise<Rule> {
  const r = await derive(toolCall, over);
  if (!r || "reason" in r) throw new Error(`nothing remembered: ${JSON.stringify(r)}`);
  return { id: "derived", ...(r as DerivedRule) };
}

const mcp = (name: string, rawInput: unknown, kind = "other") => ({ toolCallId: "t", kind, name, rawInput });

describe("issue 35: a tool's name is never a rule by itself", () => {
  it("an always on one call of a named MCP tool stores that exact call: another input of the same tool is asked", async () => {
    const first = mcp("mcp__github__create_issue", { repo: "acme/app", title: "typo" });
    const rule = await remembered(first);
    expect(rule.matcher.type).toBe("exact");
    expect(rule.description).toMatch(/exactly this call of the other tool mcp__github__create_issue, with this exact input/);
    expect(await judge([rule], first)).toBe("allow");
    expect(await judge([rule], mcp("mcp__github__create_issue", { repo: "acme/app", title: "typo", body: "x" }))).toBeNull();
    expect(await judge([rule], mcp("mcp__github__create_issue", { repo: "acme/secret", title: "typo" }))).toBeNull();
  });

  it("a web fetch: an always on one URL never covers another URL, or the same URL under another kind or name", async () => {
    const fetch = mcp("WebFetch", { url: "https://docs.example/a" }, "fetch");
    const rule = await remembered(fetch);
    expect(await judge([rule], fetch)).toBe("allow");
    expect(await judge([rule], mcp("WebFetch", { url: "https://evil.example/?k=secret" }, "fetch"))).toBeNull();
    expect(await judge([rule], mcp("WebFetch2", { url: "https://docs.example/a" }, "fetch"))).toBeNull();
    expect(await judge([rule], mcp("WebFetch", { url: "https://docs.example/a" }, "other"))).toBeNull();
  });

  it("the exact call is keyed on the agent too, and its input is normalised (key order does not matter)", async () => {
    const rule = await remembered(mcp("mcp__x__y", { a: 1, b: [2, 3] }));
    expect(rule.scope?.agent).toBe("demo");
    expect(await judge([rule], mcp("mcp__x__y", { b: [2, 3], a: 1 }))).toBe("allow");
    const other = decide(compileRules([rule]), {
      toolCall: mcp("mcp__x__y", { a: 1, b: [2, 3] }),
      options: OPTIONS,
      cwd: PROJECT,
      agent: "another-agent",
      now: 1,
      exactHash: await exactHash(mcp("mcp__x__y", { a: 1, b: [2, 3] })),
    });
    expect(other.decision).toBeNull();
  });

  it("property: no always, allow or reject, on any named tool of any kind yields a tool rule", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("other", "fetch", "think", "search", "switch_mode", "made_up"),
        fc.string({ minLength: 1, maxLength: 20 }),
        fc.jsonValue(),
        fc.constantFrom("allow_always", "reject_always"),
        fc.constantFrom("/srv/proj-a", "/", "/root"),
        async (kind, name, rawInput, optionKind, cwd) => {
          const r = await derive(mcp(name, rawInput, kind), { optionKind, cwd });
          if (r && !("reason" in r)) expect(r.matcher.type).toBe("exact");
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("property: an allow tool rule posted through the API answers no call; a reject tool rule still does", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 12 }), fc.jsonValue(), fc.boolean(), async (name, rawInput, named) => {
        const call = mcp(name, rawInput);
        const matcher = { type: "tool", kind: "other", ...(named ? { name } : {}) } as const;
        expect(await judge([{ id: "a", decision: "allow", matcher }], call)).toBeNull();
        expect(await judge([{ id: "r", decision: "reject", matcher }], call)).toBe("reject");
      }),
      { numRuns: RUNS },
    );
  });
});
