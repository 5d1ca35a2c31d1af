// The remembered-decision engine: pure functions, no Cloudflare imports.
export { canonicalJson, exactHash } from "./canonical";
export { commandText, commandsOf } from "./command";
export { type DerivedRule, type DeriveInput, type DeriveResult, deriveRule } from "./derive";
export { globMatches, isWithin, pathsOf, resolvePath } from "./paths";
export {
  type CompiledRules,
  type Decision,
  type DecisionContext,
  type Matcher,
  type PermissionOptionLike,
  type Rule,
  chooseOption,
  compileRules,
  decide,
  matcherText,
  parseMatcher,
} from "./rules";
export { parseCommands, type SimpleCommand } from "./shell";
