// What a rule covers, in words, from its matcher and scope: shown before an "always" answer is
// stored and beside every rule in the Rules view.

import { prefixCovers } from "../../protocol/rules/coverage";
import type { Matcher } from "../../protocol/rules/rules";

export interface Scope {
  project?: string | null;
  agent?: string | null;
  user?: string | null;
}

export function coversText(matcher: Matcher): string {
  switch (matcher.type) {
    case "command":
      // The same words the engine's table gives the rule's description (protocol/rules/tools.ts).
      return `\`${matcher.prefix.join(" ")}\` ${prefixCovers(matcher.prefix)}; anything else is asked (every command of a compound command must be covered)`;
    case "argv":
      return `exactly the command \`${matcher.argv.join(" ")}\` with these arguments and no others (every command of a compound command must be it)`;
    case "path": {
      const kinds = matcher.kinds && matcher.kinds.length > 0 ? matcher.kinds.join(" / ") : "any file operation";
      return matcher.glob.endsWith("/**")
        ? `${kinds} of any file under ${matcher.glob.slice(0, -3)}, except files that decide what commands run (.git/, Makefile, package.json, .npmrc…)`
        : `${kinds} of ${matcher.glob} only`;
    }
    case "tool":
      // A tool's name is never a rule by itself (decision 0038): an allow by tool answers nothing.
      return matcher.name
        ? `rejects only: the ${matcher.kind} tool ${matcher.name}, with any input (an allow by a tool's name answers nothing)`
        : `rejects only: any ${matcher.kind} tool call (an allow by a tool's name answers nothing)`;
    case "exact":
      return "only this exact operation: the same kind, command or paths and content; anything different is asked again";
    default:
      return "what the rule's description says";
  }
}

/**
 * Where a rule applies. An allow on commands applies only in its project's own directory (a
 * subdirectory's makefile or repository is not what was approved: protocol/rules/rules.ts `whereFor`);
 * a path rule and a reject hold anywhere in the project.
 */
export function scopeText(scope: Scope, matcher: Matcher, decision: "allow" | "reject"): string {
  const commandsHere = decision === "allow" && (matcher.type === "command" || matcher.type === "argv" || matcher.type === "exact");
  const parts = [
    scope.project
      ? commandsHere
        ? `in ${scope.project} itself (a command run in a subdirectory is asked)`
        : `in ${scope.project} and below`
      : "in every project",
    scope.agent ? `for agent ${scope.agent}` : "for every agent",
    scope.user ? `when ${scope.user} is asking` : "for everyone on the team",
  ];
  return parts.join(", ");
}
