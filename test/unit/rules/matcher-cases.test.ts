// Every case of the shared matcher fixture (../shared/acp/matcher-cases.json, copied into
// test/fixtures): a tool call that arrives while the tenant holds its group's rules.
import { describe, expect, it } from "vitest";
import fixture from "../../fixtures/matcher-cases.json" with { type: "json" };
import { type Rule, compileRules, decide } from "../../../protocol/rules";

const OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

/**
 * Where this gateway decides a shared case differently, and why (the fixture asks for the reason).
 * Keyed by the case's command as JSON.
 */
const DECIDED_DIFFERENTLY: Record<string, { expect: string; why: string }> = {
  '"npm test -- --watch=false"': {
    expect: "ask",
    why: "words after `--` go to the project's test runner, which may load code from them (issue 22: a prefix covers only argv it fully understands)",
  },
};

type Case = { command?: unknown; kind?: string; paths?: string[]; rawInput?: unknown; expect: string; why?: string };

function toolCallOf(c: Case): Record<string, unknown> {
  if (c.command !== undefined)
    return { toolCallId: "t", kind: "execute", title: "Run something harmless", rawInput: { command: c.command } };
  if (c.paths !== undefined) return { toolCallId: "t", kind: c.kind, title: "Edit a file", locations: c.paths.map((path) => ({ path })) };
  return { toolCallId: "t", kind: c.kind, rawInput: c.rawInput };
}

describe("matcher-cases.json", () => {
  for (const group of fixture.groups) {
    const rules: Rule[] = group.rules.map((r, i) => ({ id: `r${i}`, ...(r as Omit<Rule, "id">) }));
    const compiled = compileRules(rules);
    describe(group.name, () => {
      for (const shared of group.cases as Case[]) {
        const differently = DECIDED_DIFFERENTLY[JSON.stringify(shared.command ?? shared.paths ?? shared.rawInput)];
        const c: Case = differently ? { ...shared, ...differently } : shared;
        const label = `${c.expect}: ${JSON.stringify(c.command ?? c.paths ?? c.rawInput)}${c.why ? ` — ${c.why}` : ""}`;
        it(label, () => {
          const decision = decide(compiled, { toolCall: toolCallOf(c), options: OPTIONS, cwd: group.cwd, agent: "demo", now: Date.now() });
          const got = decision.decision === "allow" ? "match" : decision.decision === "reject" ? "reject" : "ask";
          expect(got).toBe(c.expect);
        });
      }
    });
  }
});
