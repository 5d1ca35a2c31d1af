// A closed-world reading of the arguments of one known command (`git log …`, `npm test …`): every word
// must be an option the grammar lists, spelled exactly as listed, with a value it accepts, or a
// positional of the kind it allows. Anything else — an unknown option, an abbreviation of a known one
// (getopt_long and nopt expand those; this never does), a short cluster with a letter not listed, a
// value where none is taken, `--` and what follows (unless the grammar says what follows is only more
// positionals), a further positional — means the arguments are not understood, and the caller asks a
// person. The grammars themselves are in tools.ts.

import { isWithin, resolvePath } from "./paths";

/** Where the command runs and the directory nothing may leave (the rule's project, else the session's). */
export interface Where {
  workdir: string;
  project: string;
}

/** Whether a value is acceptable where the command runs. */
export type ValueCheck = (value: string, where: Where) => boolean;

export interface OptionSpec {
  /** The check on the option's value; absent: a flag, which takes none. */
  value?: ValueCheck;
  /** The value may be omitted (`--color`, `--porcelain`); given, it is written `--x=v` or, short, `-xv`. */
  optional?: boolean;
  /** The value may be the next word (`-n 5`, `--package foo`); otherwise only `--x=v` / `-xv`. */
  separate?: boolean;
}

export interface ArgGrammar {
  /** Every option known to be harmless, by its exact spelling (`-s`, `--short`). */
  options: Readonly<Record<string, OptionSpec>>;
  /** Letters of flags that may be written together (`-sb`); each must also be listed as `-<letter>`. */
  cluster?: string;
  /** `-<digits>` is a count (`git log -5`). */
  numericShort?: boolean;
  /** At most this many positionals, each passing `check`. */
  positionals?: { max: number; check: ValueCheck };
  /** What `--` means: nothing may follow (the default: what follows goes to another program), or more positionals. */
  afterDoubleDash?: "positionals";
}

/** Null when every word is understood; otherwise what was not, in words a person reads. */
export function notUnderstood(grammar: ArgGrammar, words: readonly string[], where: Where): string | null {
  let positionals = 0;
  let onlyPositionals = false;
  const positional = (word: string): string | null => {
    const p = grammar.positionals;
    if (!p || positionals >= p.max) return `the further argument ${quote(word)}`;
    if (!p.check(word, where)) return `the argument ${quote(word)}`;
    positionals += 1;
    return null;
  };
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    if (onlyPositionals || !word.startsWith("-") || word === "-") {
      const why = positional(word);
      if (why) return why;
      continue;
    }
    if (word === "--") {
      if (grammar.afterDoubleDash !== "positionals") return "`--` and what follows it (passed on to another program)";
      onlyPositionals = true;
      continue;
    }
    if (word.startsWith("--")) {
      const eq = word.indexOf("=");
      const name = eq < 0 ? word : word.slice(0, eq);
      const spec = own(grammar.options, name);
      if (!spec) return `the option ${quote(name)}`;
      if (!spec.value) {
        if (eq >= 0) return `a value given to ${quote(name)}`;
        continue;
      }
      if (eq >= 0) {
        if (!spec.value(word.slice(eq + 1), where)) return `the value of ${quote(name)}`;
      } else if (spec.separate && i + 1 < words.length) {
        i += 1;
        if (!spec.value(words[i] as string, where)) return `the value of ${quote(name)}`;
      } else if (!spec.optional) return `${quote(name)} without its value`;
      continue;
    }
    // A short option: `-x`, `-x VALUE`, `-xVALUE`, a cluster of flags `-xyz`, or a count `-5`.
    if (grammar.numericShort && /^-[0-9]{1,6}$/.test(word)) continue;
    const name = word.slice(0, 2);
    const spec = own(grammar.options, name);
    if (word.length === 2) {
      if (!spec) return `the option ${quote(word)}`;
      if (spec.value && !spec.optional) {
        if (!spec.separate || i + 1 >= words.length) return `${quote(word)} without its value`;
        i += 1;
        if (!spec.value(words[i] as string, where)) return `the value of ${quote(word)}`;
      }
      continue;
    }
    if (spec?.value) {
      if (!spec.value(word.slice(2), where)) return `the value of ${quote(name)}`;
      continue;
    }
    const letters = word.slice(1);
    const cluster = grammar.cluster ?? "";
    for (const letter of letters) {
      const flag = own(grammar.options, `-${letter}`);
      if (!cluster.includes(letter) || !flag || flag.value) return `the option cluster ${quote(word)}`;
    }
  }
  return null;
}

function own(options: Readonly<Record<string, OptionSpec>>, name: string): OptionSpec | undefined {
  return Object.hasOwn(options, name) ? options[name] : undefined;
}

function quote(word: string): string {
  const shown = word.length > 60 ? `${word.slice(0, 60)}…` : word;
  return `\`${shown}\``;
}

// Value checks the grammars share.

/** A small count: `-n 20`, `-j4`. */
export const count: ValueCheck = (v) => /^[0-9]{1,6}$/.test(v);

/** Any text: a format string, a date, a search pattern — read by the tool, never run or opened. */
export const text: ValueCheck = () => true;

/** One of these words. */
export const oneOf =
  (...words: string[]): ValueCheck =>
  (v) =>
    words.includes(v);

/** A name: a package, a feature list, a test filter. */
export const name: ValueCheck = (v) => /^[A-Za-z0-9][A-Za-z0-9_.,:/@+-]{0,199}$/.test(v);

/**
 * A path, or a word git reads as a revision or a path: resolved against where the command runs, it
 * must stay inside the project. Never an option, a home-relative path or a git pathspec with magic.
 */
export const pathInProject: ValueCheck = (v, where) => {
  if (v === "" || v.startsWith("-") || v.startsWith("~") || v.startsWith(":") || v.includes("\0")) return false;
  const resolved = resolvePath(v.startsWith("/") ? v : `${where.workdir}/${v}`);
  return resolved !== null && isWithin(resolved, where.project);
};
