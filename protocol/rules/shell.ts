// Judging a shell command as bash would run it, for command rules. The parser reads every quoting
// and expansion form bash has — '…', "…", $'…' (ANSI-C), $"…", backslash escapes and line
// continuations, ${…}, $(…), `…`, <(…), here-documents and here-strings, ; & && || | |& newlines,
// comments, brace and glob characters, assignments, reserved words, (subshells) and { groups; } —
// and answers the simple commands bash would run (argv after quote removal), or null when it cannot
// be sure what would run. Null is never approval: callers ask a person. So it fails closed on every
// expansion whose value it cannot know ($x, ${…}, $(…), `…`, <(…)), here-documents, control flow,
// function definitions, assignments, redirections that touch a file, a job sent to the background
// (`&`: it outlives the call), and on every bash builtin that can run code, change how later words
// resolve or evaluate a variable name (eval, source, export, cd, printf -v, let, read, test -v…):
// only echo, true, false, : and pwd are judged as commands.

export interface SimpleCommand {
  argv: string[];
  /** Per word: true when bash expands it further (glob, brace, tilde, $"…"): its value is not its text. */
  fuzzy: boolean[];
}

/** The only bash builtins judged as commands: they run nothing and set nothing. */
const HARMLESS_BUILTINS = new Set(["echo", "true", "false", ":", "pwd"]);

/** Every other bash builtin (and `time`/`coproc`): the request goes to a person. */
const BUILTINS = new Set(
  (
    "alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs disown enable eval exec exit " +
    "export fc fg getopts hash help history jobs kill let local logout mapfile popd printf pushd read readarray readonly return " +
    "set shift shopt source suspend test times trap type typeset ulimit umask unalias unset wait . [ [[ ]] time coproc"
  ).split(" "),
);

const RESERVED = new Set("if then else elif fi case esac for select while until do done in function ! { } [[ ]] time coproc".split(" "));

/**
 * Shells whose `-c SCRIPT` form is judged by its script, by name or at a system path (an agent-chosen
 * path could be any program). A login shell (`-lc`, codex's form) also reads the user's profile:
 * the user's files, which no rule lets the agent write outside its project (decision 0039).
 */
const WRAPPERS = new Map<string, "bash" | "sh">([
  ...["bash", "/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"].map((p) => [p, "bash"] as const),
  ...["sh", "/bin/sh", "/usr/bin/sh"].map((p) => [p, "sh"] as const),
]);
const WRAPPER_FLAGS = new Set(["-c", "-lc", "-cl"]);
/**
 * What `sh` (dash, a POSIX shell) reads as bash does: no `$`, backquote or backslash (dash has no
 * `$'…'`), no braces, none of bash's own `|&`, `&>`, `<<<`. Any other `sh -c` script is not judged.
 */
const POSIX_SAME = (script: string) => !/[$`\\{}]|\|&|&>|<<</.test(script);
const MAX_WRAPPER_DEPTH = 3;

type Word = { kind: "word"; text: string; fuzzy: boolean; quoted: boolean; assignment: boolean };
type Op = { kind: "op"; text: string };
type Token = Word | Op;

const META = new Set([" ", "\t", "\n", ";", "&", "|", "<", ">", "(", ")"]);

/** Splits into words (quotes removed) and operators; null on anything whose value is not known. */
function tokenize(src: string): Token[] | null {
  const tokens: Token[] = [];
  let i = 0;
  let text = "";
  let inWord = false;
  let quoted = false;
  let fuzzy = false;
  /** The unquoted characters at the start of the word, for assignments (`NAME=…`). */
  let bare = "";
  let bareOpen = true;
  const flush = () => {
    if (inWord) {
      const assignment = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/.test(bare);
      tokens.push({ kind: "word", text, fuzzy, quoted, assignment });
    }
    text = "";
    inWord = quoted = fuzzy = false;
    bare = "";
    bareOpen = true;
  };
  const quotedPart = (s: string) => {
    text += s;
    inWord = true;
    quoted = true;
    bareOpen = false;
  };
  while (i < src.length) {
    const c = src[i] as string;
    const next = src[i + 1];
    if (c === "\\") {
      if (next === undefined) return null;
      if (next === "\n") {
        i += 2; // a line continuation: nothing, not even a word break
        continue;
      }
      quotedPart(next);
      i += 2;
      continue;
    }
    if (c === "'") {
      const end = src.indexOf("'", i + 1);
      if (end < 0) return null;
      quotedPart(src.slice(i + 1, end));
      i = end + 1;
      continue;
    }
    if (c === '"') {
      const read = doubleQuoted(src, i + 1);
      if (!read) return null;
      quotedPart(read.text);
      i = read.end;
      continue;
    }
    if (c === "$") {
      if (next === "'") {
        const read = ansiC(src, i + 2);
        if (!read) return null;
        quotedPart(read.text);
        i = read.end;
        continue;
      }
      if (next === '"') {
        // A translated string: the same as "…" without a message catalogue, but its value depends on one.
        const read = doubleQuoted(src, i + 2);
        if (!read) return null;
        quotedPart(read.text);
        fuzzy = true;
        i = read.end;
        continue;
      }
      return null; // $name, ${…}, $(…), $((…)), $[…], $1, $$…: a value the parser cannot know
    }
    if (c === "`") return null;
    if (META.has(c)) {
      if (c === " " || c === "\t") {
        flush();
        i += 1;
        continue;
      }
      const op = operatorAt(src, i);
      if (op === null) return null;
      // `2>`, `10>&1`: a word of digits written against a redirection is its descriptor.
      if ((op.startsWith("<") || op.startsWith(">")) && inWord && !quoted && /^\d+$/.test(text)) {
        const fd = text;
        text = "";
        inWord = false;
        flush();
        tokens.push({ kind: "op", text: fd + op });
      } else {
        // `{name}>file` allocates a descriptor into a variable.
        if ((op.startsWith("<") || op.startsWith(">")) && inWord && !quoted && /^\{[A-Za-z_]\w*\}$/.test(text)) return null;
        flush();
        tokens.push({ kind: "op", text: op });
      }
      i += op.length;
      continue;
    }
    if (c === "#" && !inWord) {
      while (i < src.length && src[i] !== "\n") i += 1; // a comment runs to the end of the line
      continue;
    }
    // An unquoted glob, brace or tilde character: bash may expand the word into other words.
    if (c === "*" || c === "?" || c === "[" || c === "{" || c === "}" || c === "~" || c === "]") {
      if (!(inWord === false && (c === "{" || c === "}") && isLoneBrace(src, i))) fuzzy = true;
    }
    text += c;
    if (bareOpen) bare += c;
    inWord = true;
    i += 1;
  }
  flush();
  return tokens;
}

/** `{` or `}` standing alone as a word: a group's brace, or a literal argument; never expanded. */
function isLoneBrace(src: string, i: number): boolean {
  const after = src[i + 1];
  return after === undefined || META.has(after);
}

/** The operator at `i` (which is a metacharacter), or null for one that is never judged. */
function operatorAt(src: string, i: number): string | null {
  const three = src.slice(i, i + 3);
  const two = src.slice(i, i + 2);
  if (three === ";;&" || two === ";;" || two === ";&") return null; // case arms
  if (two === "((") return null; // arithmetic, whose subscripts can run code
  if (two === "<(" || two === ">(") return null; // process substitution
  if (two === "<<") return null; // here-documents and here-strings feed input the parser does not judge
  if (three === "&>>") return three;
  for (const op of ["&&", "||", "|&", ">>", "&>", ">&", "<&", "<>", ">|"]) if (two === op) return op;
  return src[i] as string;
}

/** A double-quoted string from `start` (after the quote): its text and the index after the closing quote. */
function doubleQuoted(src: string, start: number): { text: string; end: number } | null {
  let text = "";
  let i = start;
  while (i < src.length) {
    const d = src[i] as string;
    if (d === '"') return { text, end: i + 1 };
    if (d === "\\" && i + 1 < src.length) {
      const e = src[i + 1] as string;
      if (e === "\n") {
        i += 2;
        continue;
      }
      if ('"\\$`'.includes(e)) {
        text += e;
        i += 2;
        continue;
      }
    }
    if (d === "$" || d === "`") return null; // expansion and substitution run inside double quotes
    text += d;
    i += 1;
  }
  return null;
}

const SIMPLE_ESCAPES: Record<string, string> = {
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "\\": "\\",
  "'": "'",
  '"': '"',
  "?": "?",
};

/** `$'…'` from `start` (after `$'`): backslash escapes are decoded, and `\'` does not end it. */
function ansiC(src: string, start: number): { text: string; end: number } | null {
  let text = "";
  let i = start;
  while (i < src.length) {
    const d = src[i] as string;
    if (d === "'") return { text, end: i + 1 };
    if (d !== "\\") {
      text += d;
      i += 1;
      continue;
    }
    const e = src[i + 1];
    if (e === undefined) return null;
    const simple = SIMPLE_ESCAPES[e];
    if (simple !== undefined) {
      text += simple;
      i += 2;
      continue;
    }
    let m: RegExpExecArray | null;
    if ((m = /^[0-7]{1,3}/.exec(src.slice(i + 1, i + 4)))) {
      const code = parseInt(m[0], 8) & 0xff;
      if (code === 0 || code > 0x7f) return null; // NUL ends the word; high bytes depend on the locale
      text += String.fromCharCode(code);
      i += 1 + m[0].length;
      continue;
    }
    if (e === "x" && (m = /^[0-9a-fA-F]{1,2}/.exec(src.slice(i + 2, i + 4)))) {
      const code = parseInt(m[0], 16);
      if (code === 0 || code > 0x7f) return null;
      text += String.fromCharCode(code);
      i += 2 + m[0].length;
      continue;
    }
    if (e === "c" || e === "u" || e === "U" || e === "x") return null; // control and Unicode escapes: not judged
    text += `\\${e}`; // an unknown escape stays as written
    i += 2;
  }
  return null;
}

/** The simple commands of a script, or null when it cannot be judged with certainty. */
export function parseCommands(src: string, depth = 0): SimpleCommand[] | null {
  if (depth > MAX_WRAPPER_DEPTH) return null;
  const tokens = tokenize(src);
  if (!tokens) return null;
  const commands: SimpleCommand[] = [];
  let argv: string[] = [];
  let fuzzy: boolean[] = [];
  let atStart = true;
  let parens = 0;
  let braces = 0;
  const end = (): boolean => {
    if (argv.length > 0) {
      const inner = judged({ argv, fuzzy }, depth);
      if (inner === null) return false;
      commands.push(...inner);
    }
    argv = [];
    fuzzy = [];
    atStart = true;
    return true;
  };
  for (let t = 0; t < tokens.length; t++) {
    const token = tokens[t] as Token;
    if (token.kind === "op") {
      const op = token.text;
      if (op === "(") {
        if (!atStart || argv.length > 0) return null; // `name (` defines a function
        parens += 1;
        continue;
      }
      if (op === ")") {
        if (parens === 0 || !end()) return null;
        parens -= 1;
        continue;
      }
      // A job sent to the background outlives the call that ran it (decision 0068): when it ends, and
      // what it writes after, cannot be known.
      if (op === "&") return null;
      if ([";", "&&", "||", "|", "|&", "\n"].includes(op)) {
        if (!end()) return null;
        continue;
      }
      // A redirection: only those that touch no file are judged.
      const target = tokens[t + 1];
      if (target?.kind !== "word" || target.fuzzy || !harmlessRedirection(op, target.text)) return null;
      t += 1;
      continue;
    }
    if (atStart && !token.quoted && RESERVED.has(token.text)) {
      if (token.text === "{") braces += 1;
      else if (token.text === "}" && braces > 0) braces -= 1;
      else return null; // control flow, negation, function definitions, `time`
      continue;
    }
    if (atStart && token.assignment) return null; // assignments change what later words mean
    argv.push(token.text);
    fuzzy.push(token.fuzzy);
    atStart = false;
  }
  if (!end() || parens !== 0 || braces !== 0) return null;
  return commands;
}

/** Descriptor duplications and closings, and /dev/null, touch no file: `2>&1`, `>&2`, `2>&-`, `>/dev/null`. */
function harmlessRedirection(op: string, target: string): boolean {
  const base = op.replace(/^\d+/, "");
  if (base === ">&" || base === "<&") return /^(\d+-?|-)$/.test(target) || (base === ">&" && target === "/dev/null");
  if ([">", ">>", ">|", "&>", "&>>", "<"].includes(base)) return target === "/dev/null";
  return false;
}

/** One simple command as bash runs it: builtins other than the harmless few fail; `bash -c`, `sh -c` are judged by their script. */
function judged(command: SimpleCommand, depth: number): SimpleCommand[] | null {
  const [program, flag, script, ...rest] = command.argv;
  if (program === undefined || command.fuzzy[0]) return null; // a program name bash would expand
  if (BUILTINS.has(program) && !HARMLESS_BUILTINS.has(program)) return null;
  const shell = WRAPPERS.get(program);
  if (shell !== undefined && flag !== undefined && WRAPPER_FLAGS.has(flag) && !command.fuzzy[1]) {
    if (script === undefined || rest.length > 0 || command.fuzzy[2]) return null; // positional arguments: not judged
    if (shell === "sh" && !POSIX_SAME(script)) return null;
    return parseCommands(script, depth + 1);
  }
  return [command];
}

/** An argv array as agents send it, run without a shell: a `bash -c` wrapper is judged by its script. */
export function commandsOfArgv(argv: string[]): SimpleCommand[] | null {
  if (argv.length === 0) return null;
  return judged({ argv, fuzzy: argv.map(() => false) }, 0);
}

/**
 * Every word-like run of characters in a script, when it cannot be parsed: a reject rule is judged
 * against these ("when in doubt, a reject applies").
 */
export function looseWords(src: string): string[] {
  return src.split(/[^A-Za-z0-9_./:=@%+,-]+/).filter((w) => w !== "");
}
