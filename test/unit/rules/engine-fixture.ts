// What the rules tests of issues 22 and 35 share: one project, the options a request offers, calls,
// rules, and the engine's two answers — `judge` (what a request gets) and `derive` (what a person's
// "always" stores) — as the gateway calls them.
import { type DerivedRule, type DeriveInput, type Rule, compileRules, decide, deriveRule, exactHash } from "../../../protocol/rules";

export const PROJECT = "/srv/proj-a";
export const OPTIONS = [
  { optionId: "ao", name: "Allow once", kind: "allow_once" },
  { optionId: "aa", name: "Always allow", kind: "allow_always" },
  { optionId: "ro", name: "Reject once", kind: "reject_once" },
];
export const exec = (command: unknown, extra: Record<string, unknown> = {}) => ({
  toolCallId: "t",
  kind: "execute",
  rawInput: { command, ...extra },
});
export const allow = (prefix: string[], project: string | null = PROJECT): Rule => ({
  id: `allow ${prefix.join(" ")}`,
  decision: "allow",
  matcher: { type: "command", prefix },
  ...(project ? { scope: { project } } : {}),
});
export const reject = (prefix: string[]): Rule => ({
  id: `reject ${prefix.join(" ")}`,
  decision: "reject",
  matcher: { type: "command", prefix },
});
export const judge = async (rules: Rule[], toolCall: Record<string, unknown>, cwd = PROJECT) =>
  decide(compileRules(rules), { toolCall, options: OPTIONS, cwd, agent: "demo", now: 1, exactHash: await exactHash(toolCall) }).decision;

export async function derive(toolCall: Record<string, unknown>, over: Partial<DeriveInput> = {}) {
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
export async function remembered(toolCall: Record<string, unknown>, over: Partial<DeriveInput> = {}): Promise<Rule> {
  const r = await derive(toolCall, over);
  if (!r || "reason" in r) throw new Error(`nothing remembered: ${JSON.stringify(r)}`);
  return { id: "derived", ...(r as DerivedRule) };
}
