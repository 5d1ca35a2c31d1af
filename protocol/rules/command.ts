// The command of an `execute` tool call, from its rawInput, in the shapes real agents send:
//   "git status"                                     a plain string rawInput
//   { command: "git status", description? }          claude-code's Bash tool, most agents
//   { cmd: "git status" }                            some MCP shells
//   { command: ["bash", "-lc", "git status"], workdir? }   codex (argv; a shell wrapper is judged by its script)
//   { command: "git", args: ["status"] }             program + args
//   { argv: ["git", "status"] }
// Anything else yields null: a shape the matcher does not understand is never approval.

import { isObject } from "../jsonrpc";
import { type SimpleCommand, commandsOfArgv, looseWords, parseCommands } from "./shell";

export function commandsOf(rawInput: unknown): SimpleCommand[] | null {
  if (typeof rawInput === "string") return nonEmpty(parseCommands(rawInput));
  if (isStringArray(rawInput)) return nonEmpty(commandsOfArgv(rawInput));
  if (!isObject(rawInput)) return null;
  const command = rawInput.command ?? rawInput.cmd;
  if (typeof command === "string") {
    if (rawInput.args === undefined) return nonEmpty(parseCommands(command));
    // A program with separate arguments is not run through a shell.
    return isStringArray(rawInput.args) ? nonEmpty(commandsOfArgv([command, ...rawInput.args])) : null;
  }
  if (isStringArray(command)) return nonEmpty(commandsOfArgv(command));
  if (isStringArray(rawInput.argv)) return nonEmpty(commandsOfArgv(rawInput.argv));
  return null;
}

/** The command as one line for people and for the exact text of audits. */
export function commandText(rawInput: unknown): string | null {
  if (typeof rawInput === "string") return rawInput;
  if (isStringArray(rawInput)) return rawInput.join(" ");
  if (!isObject(rawInput)) return null;
  const command = rawInput.command ?? rawInput.cmd;
  if (typeof command === "string") return isStringArray(rawInput.args) ? [command, ...rawInput.args].join(" ") : command;
  if (isStringArray(command)) return command.join(" ");
  if (isStringArray(rawInput.argv)) return rawInput.argv.join(" ");
  return null;
}

/** Every word-like run of the command's text: what a reject is held against when the command cannot be judged. */
export function looseWordsOf(rawInput: unknown): string[] | null {
  const text = commandText(rawInput);
  return text === null ? null : looseWords(text);
}

function nonEmpty(commands: SimpleCommand[] | null): SimpleCommand[] | null {
  return commands && commands.length > 0 ? commands : null;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === "string");
}
