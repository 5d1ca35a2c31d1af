// What a rule covers, in words, from its matcher and scope: shown before an "always" answer is
// stored and beside every rule in the Rules view.

import { prefixCovers } from "../../protocol/rules/coverage";
import type { Matcher } from "./api";

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
      return matcher.name ? `the ${matcher.kind} tool ${matcher.name}, with any input` : `any ${matcher.kind} tool call`;
    case "exact":
      return "only this exact operation: the same kind, command or paths and content; anything different is asked again";
    default:
      return "what the rule's description says";
  }
}

export function scopeText(scope: Scope): string {
  const parts = [
    scope.project ? `in ${scope.project} and below` : "in every project",
    scope.agent ? `for agent ${scope.agent}` : "for every agent",
    scope.user ? `when ${scope.user} is asking` : "for everyone on the team",
  ];
  return parts.join(", ");
}
