// Every case of the shared matcher fixture (../shared/acp/matcher-cases.json, copied into
// test/fixtures): a tool call that arrives while the tenant holds its group's rules.
import { describe, expect, it } from "vitest";
import fixture from "../../fixtures/matcher-cases.json" with { type: "json" };
import { type Rule, compileRules, decide } from "../../../protocol/rules";

const OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

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
      for (const c of group.cases as Case[]) {
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
