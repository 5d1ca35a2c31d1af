// The remembered-decision engine: pure functions, no Cloudflare imports.
export { canonicalJson, exactHash } from "./canonical";
export { type DerivedRule, type DeriveInput, type DeriveResult, deriveRule } from "./derive";
export { type CompiledRules, type DecisionContext, type Rule, compileRules, decide, matcherText, parseMatcher } from "./rules";
export { parseCommands } from "./shell";
