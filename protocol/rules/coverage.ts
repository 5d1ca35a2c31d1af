// What an allow prefix rule covers, closed-world: a simple command whose words start with the prefix
// and whose every further word the table's grammar for that program and subcommand understands
// (tools.ts, grammar.ts), run inside the project. A prefix on a program or subcommand not in the
// table, or on one that runs other code, covers its exact words only. The rule's description is
// written from the same table, so what a person reads is what the engine does.

import { type Where, notUnderstood } from "./grammar";
import { runsOtherCode } from "./programs";
import type { SimpleCommand } from "./shell";
import { type PlainTool, TOOLS, type Tool, type ToolForm, formOf } from "./tools";

/** Null when `prefix` covers `command` run at `where`; otherwise why not, in words a person reads. */
export function prefixCoverage(prefix: readonly string[], command: SimpleCommand, where: Where): string | null {
  const argv = command.argv;
  if (prefix.length === 0 || prefix.length > argv.length) return "the command does not start with the rule's words";
  for (let i = 0; i < argv.length; i++) if (command.fuzzy[i]) return "a word the shell expands further";
  if (!prefix.every((w, i) => w === argv[i])) return "the command does not start with the rule's words";
  if (argv.length === prefix.length) return null; // exactly the words the rule names
  if (runsOtherCode(command)) return "a program that runs other code: only its exact words are covered";
  const found = formOf(argv);
  if (!found) return "a program or subcommand the gateway does not know: only the rule's exact words are covered";
  return notUnderstood(found.form.grammar, argv.slice(found.keyLength), where);
}

/**
 * The prefix a person's allow may be remembered as — the words that name the command's form in the
 * table (`git log`, `npm run build`) — or null when the command is not one the table understands in
 * full, so it is remembered exactly.
 */
export function derivablePrefix(command: SimpleCommand, where: Where): string[] | null {
  const found = formOf(command.argv);
  if (!found) return null;
  const prefix = command.argv.slice(0, found.keyLength);
  return prefixCoverage(prefix, command, where) === null ? prefix : null;
}

/** What a prefix rule covers, after its words, as the rule's description says it. */
export function prefixCovers(prefix: readonly string[]): string {
  const exact = "with exactly these words, nothing more";
  const program = prefix[0];
  if (program === undefined || !Object.hasOwn(TOOLS, program)) return exact;
  const tool = TOOLS[program] as Tool | PlainTool;
  if ("plain" in tool) return tool.plain.covers;
  const sub = prefix[1];
  if (sub === undefined) return "in the forms the gateway knows to be harmless only (tools.ts)";
  if (!Object.hasOwn(tool.subcommands, sub)) return exact;
  const form = tool.subcommands[sub] as ToolForm;
  if (tool.runners?.has(sub) && prefix.length === 2) return `with a script name, ${form.covers}`;
  return form.covers;
}
