// Whether a reject command rule applies: to every spelling the tool accepts, and whenever the engine
// cannot prove the command is something else. A reject on `npm publish` applies to `npm publis`,
// `npm pub` (npm expands unique abbreviations) and to any npm command word npm does not list; one on
// `git push` to `git -C . push`, to `git -c alias.p=push p` and to any word that is not a git
// command (an alias); one on `rm -rf` to `rm -fr`, `rm -r -f`, `rm -Rf`, `rm -rfv`,
// `rm --recursive --force` and `rm --rec --forc`; one on `make deploy` to `make test deploy`. Inside a
// wrapper (`sudo`, `sh -c`, `ssh host …`) and in a command the parser cannot judge, the words are
// looked for anywhere. A word the shell expands further could be anything, so it is a match.

import type { Operation } from "../operation";
import { COMMAND_NAMES } from "./command-names";
import { type ArgGrammar, notUnderstood } from "./grammar";
import { basename, runsOtherCode, subcommandPositions } from "./programs";
import { type SimpleCommand, looseWords } from "./shell";
import { MAKE_GRAMMAR } from "./tools";

/** A reject command rule's words (program, subcommands, options) apply to some part of the operation. */
export function rejectApplies(words: readonly string[], op: Operation): boolean {
  if (words.length === 0) return false;
  if (op.commands) return op.commands.some((c) => spelledIn(words, c));
  if (op.looseWords) return spelledIn(words, { argv: op.looseWords, fuzzy: op.looseWords.map(() => false) }, true);
  return false;
}

/**
 * Whether `words` is what runs in `command`, or — for a wrapper, or when `anywhere` — at any position
 * in it, or in any script written in one of its arguments.
 */
function spelledIn(words: readonly string[], command: SimpleCommand, anywhere = false): boolean {
  const wraps = runsOtherCode(command);
  const starts = anywhere || wraps ? command.argv.map((_, i) => i) : [0];
  for (const s of starts) if (runsAs(words, command.argv.slice(s), command.fuzzy.slice(s))) return true;
  if (anywhere || !wraps) return false;
  // `sudo sh -c 'git push'`, `ssh host "git push"`: the words of every argument.
  const inner = command.argv.slice(1).flatMap((a) => looseWords(a));
  return inner.length > 0 && spelledIn(words, { argv: inner, fuzzy: inner.map(() => false) }, true);
}

/** `argv` (a program and its words) is, or may be, the command `words` names. */
function runsAs(words: readonly string[], argv: string[], fuzzy: boolean[]): boolean {
  const head = argv[0];
  if (head === undefined) return false;
  if (fuzzy.some(Boolean)) return fuzzy[0] === true || basename(head) === words[0];
  const program = basename(head);
  if (program !== words[0]) return false;
  const subs = words.slice(1).filter((w) => !w.startsWith("-") || w === "-");
  const options = words.slice(1).filter((w) => w.startsWith("-") && w !== "-");
  if (program === "make") return makeRunsAs(subs, options, argv.slice(1));
  return subcommandsFrom(program, program, subs, argv, options);
}

/**
 * After the program (or the last matched subcommand) at argv[0], the next subcommand word is there
 * too. `path` is what matched so far (`git push`): the key of its option table.
 */
function subcommandsFrom(program: string, path: string, subs: string[], argv: string[], options: string[]): boolean {
  if (subs.length === 0) return optionsPresent(path, options, argv.slice(1));
  const wanted = subs[0] as string;
  // `git -c alias.x=… x`: the command line defines what a word means.
  if (program === "git" && argv.some((a, i) => (a === "-c" && /^alias\./i.test(argv[i + 1] ?? "")) || /^--config-env/.test(a))) return true;
  const fuzzy = argv.map(() => false);
  return subcommandPositions(argv, fuzzy).some((p) => {
    const got = argv[p];
    if (got === undefined) return false;
    if (!maySameCommand(program, got, wanted)) return false;
    const rest = [program, ...argv.slice(p + 1)];
    return subcommandsFrom(wanted, `${path} ${wanted}`, subs.slice(1), rest, options);
  });
}

/**
 * `got`, written where `wanted` would stand, may run it: the same word, an alias, an abbreviation,
 * or a word the engine cannot prove to be another command of the program.
 */
function maySameCommand(program: string, got: string, wanted: string): boolean {
  if (got === wanted) return true;
  const names = Object.hasOwn(COMMAND_NAMES, program) ? COMMAND_NAMES[program] : undefined;
  if (!names) return wanted.startsWith(got); // an abbreviation, as some tools take
  const canonical = (w: string) => (names.commands.has(w) ? w : Object.hasOwn(names.aliases, w) ? names.aliases[w] : undefined);
  const gotCommand = canonical(got);
  return gotCommand === undefined || gotCommand === (canonical(wanted) ?? wanted);
}

/**
 * make: every non-option word is a target. A reject applies when its targets are among them, or when
 * make is told anything beyond the harmless options (a variable, another makefile or directory, an
 * abbreviation): then any recipe may run.
 */
function makeRunsAs(targets: string[], options: string[], args: string[]): boolean {
  const words = args.filter((a) => !a.startsWith("-") || a === "-");
  const doubt = notUnderstood(MAKE_ANY_TARGETS, args, { workdir: "/", project: "/" }) !== null;
  return (doubt || targets.every((t) => words.includes(t))) && optionsPresent("make", options, args);
}

const MAKE_ANY_TARGETS: ArgGrammar = {
  ...MAKE_GRAMMAR,
  positionals: { max: Number.MAX_SAFE_INTEGER, check: (word) => !word.includes("=") },
};

/** How the options of a program are normalised: short letters and long names to one canonical name. */
interface OptionTable {
  short: Readonly<Record<string, string>>;
  /** Long names, each to its canonical name. */
  long: Readonly<Record<string, string>>;
}

const GIT_PUSH_LONG = (
  "all branches mirror delete tags follow-tags dry-run porcelain set-upstream thin no-thin quiet verbose progress no-progress " +
  "prune no-verify verify signed no-signed atomic no-atomic push-option ipv4 ipv6 recurse-submodules repo no-force-with-lease"
).split(" ");

/** Option tables by the command they belong to (`rm`, `git push`). */
const OPTION_TABLES: Readonly<Record<string, OptionTable>> = {
  "git push": {
    short: { f: "force", n: "dry-run", u: "set-upstream", d: "delete", q: "quiet", v: "verbose", o: "push-option", 4: "ipv4", 6: "ipv6" },
    long: {
      ...Object.fromEntries(GIT_PUSH_LONG.map((l) => [l, l])),
      force: "force",
      "force-with-lease": "force",
      "force-if-includes": "force",
    },
  },
  rm: {
    short: { r: "recursive", R: "recursive", f: "force", i: "interactive", I: "interactive", d: "dir", v: "verbose" },
    long: {
      recursive: "recursive",
      force: "force",
      interactive: "interactive",
      dir: "dir",
      verbose: "verbose",
      "one-file-system": "one-file-system",
      "no-preserve-root": "no-preserve-root",
      "preserve-root": "preserve-root",
      help: "help",
      version: "version",
    },
  },
};

/** Each required option (`-rf`, `--force`) is given in `args`, however spelled; or the engine cannot tell. */
function optionsPresent(command: string, required: string[], args: string[]): boolean {
  if (required.length === 0) return true;
  const table = Object.hasOwn(OPTION_TABLES, command) ? OPTION_TABLES[command] : undefined;
  const want = new Set(required.flatMap((o) => normalise(o, table)));
  const got = new Set(args.flatMap((a) => (a.startsWith("-") && a !== "-" && a !== "--" ? normalise(a, table) : [])));
  if (command === "git push") for (const a of args) if (a.startsWith("+")) got.add("--force"); // `git push origin +main`
  if (got.has("?")) return true;
  return [...want].every((w) => got.has(w) || (w.startsWith("--") && [...got].some((g) => g.startsWith("--") && w.startsWith(g))));
}

/** The canonical names of one option word; "?" for one the table cannot resolve. */
function normalise(option: string, table: OptionTable | undefined): string[] {
  if (option.startsWith("--")) {
    const name = option.slice(2).split("=")[0] as string;
    if (!table) return [genericLong(name)];
    if (Object.hasOwn(table.long, name)) return [`--${table.long[name]}`];
    const candidates = Object.keys(table.long).filter((l) => l.startsWith(name));
    return candidates.length === 1 ? [`--${table.long[candidates[0] as string]}`] : ["?"];
  }
  return [...option.slice(1)].map((l) => {
    if (!table) return `-${GENERIC_SHORT[l] ?? l}`;
    return Object.hasOwn(table.short, l) ? `--${table.short[l]}` : "?";
  });
}

/** Without a table: spellings most tools share, so a reject on `-r` also meets `-R` and `--recursive`. */
const GENERIC_SHORT: Record<string, string> = { R: "r" };

function genericLong(name: string): string {
  if (name.length >= 3 && "recursive".startsWith(name)) return "-r";
  if (name.length >= 2 && "force".startsWith(name)) return "-f";
  return `--${name}`;
}
