// Judging a shell command as a POSIX shell would run it, for command-prefix rules.
// The parser answers a list of simple commands (argv after quote removal), or null when it cannot
// be sure what would run. Null is never approval: callers ask a person. So anything unusual fails
// closed: command or process substitution, a redirection that writes a file, here-documents,
// leading environment assignments, unbalanced quotes.

export interface SimpleCommand {
  argv: string[];
}

/** Shells whose `-c SCRIPT` form is judged by its script. */
const WRAPPER_SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh"]);
const MAX_WRAPPER_DEPTH = 3;

/** Descriptor duplications and /dev/null write no file: `2>&1`, `>&2`, `>/dev/null`, `2>/dev/null`. */
function harmlessRedirection(op: string, target: string | undefined): boolean {
  if (/^\d*>&\d+$/.test(op) || /^\d*<&\d+$/.test(op)) return true;
  if ((op === ">&" || op === "<&") && target !== undefined && /^\d+$/.test(target)) return true;
  if (/^(\d*>|\d*>>|&>|&>>)$/.test(op) && target === "/dev/null") return true;
  return false;
}

/** A word after quote removal; `bare` is what came before its first quote (an assignment must be bare). */
type Token = { kind: "word"; text: string; quoted: boolean; bare: string } | { kind: "op"; text: string };

const SEPARATORS = new Set(["&&", "||", ";", "|", "&", "|&", "\n", "(", ")", ";;"]);

/** Splits into words (quotes removed) and operators; null when substitution or an unclosed quote is found. */
export function tokenize(src: string): Token[] | null {
  const tokens: Token[] = [];
  let i = 0;
  let word = "";
  let inWord = false;
  let quoted = false;
  let bare = "";
  const flush = () => {
    if (inWord) tokens.push({ kind: "word", text: word, quoted, bare: quoted ? bare : word });
    word = "";
    inWord = false;
    quoted = false;
  };
  while (i < src.length) {
    const c = src[i] as string;
    const next = src[i + 1];
    if ((c === "'" || c === '"') && !quoted) bare = word;
    if (c === "'") {
      const end = src.indexOf("'", i + 1);
      if (end < 0) return null;
      word += src.slice(i + 1, end);
      inWord = true;
      quoted = true;
      i = end + 1;
      continue;
    }
    if (c === '"') {
      i += 1;
      let closed = false;
      while (i < src.length) {
        const d = src[i] as string;
        if (d === '"') {
          closed = true;
          i += 1;
          break;
        }
        if (d === "\\" && i + 1 < src.length && '"\\$`\n'.includes(src[i + 1] as string)) {
          word += src[i + 1];
          i += 2;
          continue;
        }
        if (d === "`" || (d === "$" && src[i + 1] === "(")) return null; // substitution runs inside double quotes
        word += d;
        i += 1;
      }
      if (!closed) return null;
      inWord = true;
      quoted = true;
      continue;
    }
    if (c === "\\") {
      if (next === undefined) return null;
      if (next !== "\n") word += next; // a backslash-newline joins lines
      inWord = inWord || next !== "\n";
      i += 2;
      continue;
    }
    if (c === "`") return null;
    if (c === "$" && next === "(") return null;
    if ((c === "<" || c === ">") && next === "(") return null; // process substitution
    if (c === " " || c === "\t") {
      flush();
      i += 1;
      continue;
    }
    if (c === "#" && !inWord) {
      while (i < src.length && src[i] !== "\n") i += 1; // a comment runs to the end of the line
      continue;
    }
    // Operators. A redirection may carry a descriptor number written just before it: `2>`, `2>&1`.
    const three = src.slice(i, i + 3);
    const two = src.slice(i, i + 2);
    if (c === "\n" || c === ";" || c === "(" || c === ")" || c === "|" || c === "&" || c === "<" || c === ">") {
      let op: string;
      if (three === "<<<" || three === "&>>") op = three;
      else if (["&&", "||", ";;", "|&", ">>", "<<", "&>", ">&", "<&", "<>", ">|"].includes(two)) op = two;
      else op = c;
      // `2>&1`: the digits already in `word` belong to the redirection when nothing separates them.
      if ((op.startsWith(">") || op.startsWith("<")) && inWord && !quoted && /^\d+$/.test(word)) {
        op = word + op;
        word = "";
        inWord = false;
      } else {
        flush();
      }
      i += op.replace(/^\d+/, "").length;
      // `>&1`, `2>&-`: the descriptor is part of the operator.
      if (/[<>]&$/.test(op)) {
        const m = /^(\d+|-)/.exec(src.slice(i));
        if (m) {
          op += m[1];
          i += m[0].length;
        }
      }
      tokens.push({ kind: "op", text: op });
      continue;
    }
    word += c;
    inWord = true;
    i += 1;
  }
  flush();
  return tokens;
}

/** The simple commands of a script, or null when it cannot be judged with certainty. */
export function parseCommands(src: string, depth = 0): SimpleCommand[] | null {
  if (depth > MAX_WRAPPER_DEPTH) return null;
  const tokens = tokenize(src);
  if (!tokens) return null;
  const commands: SimpleCommand[] = [];
  let argv: string[] = [];
  let atStart = true;
  const end = (): boolean => {
    if (argv.length > 0) {
      const inner = unwrapShell(argv, depth);
      if (inner === null) return false;
      commands.push(...inner);
    }
    argv = [];
    atStart = true;
    return true;
  };
  for (let t = 0; t < tokens.length; t++) {
    const token = tokens[t] as Token;
    if (token.kind === "op") {
      if (SEPARATORS.has(token.text)) {
        if (!end()) return null;
        continue;
      }
      if (token.text.startsWith("<<")) return null; // here-documents and here-strings feed unseen input
      if (/[<>]&(\d+|-)$/.test(token.text) || /^\d*[<>]&$/.test(token.text)) {
        if (/[<>]&-$/.test(token.text)) continue; // closing a descriptor writes nothing
        if (!/[<>]&\d+$/.test(token.text)) {
          const target = tokens[t + 1];
          if (target?.kind !== "word" || !harmlessRedirection(token.text, target.text)) return null;
          t += 1;
        }
        continue;
      }
      const target = tokens[t + 1];
      if (target?.kind !== "word") return null;
      if (!harmlessRedirection(token.text, target.text)) return null; // writes or reads a file
      t += 1;
      continue;
    }
    if (atStart && (token.text === "{" || token.text === "}") && !token.quoted) continue; // a group runs its commands
    if (atStart && /^[A-Za-z_][A-Za-z0-9_]*=/.test(token.bare)) return null; // environment assignments change behaviour
    if (atStart && !token.quoted && (token.text === "!" || token.text === "then" || token.text === "do")) return null; // control flow
    argv.push(token.text);
    atStart = false;
  }
  if (!end()) return null;
  return commands;
}

/** `bash -c 'script'`, `bash -lc script`: judged by the script. Other argv are themselves. */
function unwrapShell(argv: string[], depth: number): SimpleCommand[] | null {
  const [program, flag, script, ...rest] = argv;
  if (program === undefined || !WRAPPER_SHELLS.has(program)) return [{ argv }];
  if (flag === undefined) return [{ argv }];
  if (!/^-[a-z]*c[a-z]*$/.test(flag)) return [{ argv }];
  if (script === undefined || rest.length > 0) return null; // positional arguments to the script: not judged
  return parseCommands(script, depth + 1);
}

/** An argv array as agents send it: a shell wrapper is judged by its script, anything else as is. */
export function commandsOfArgv(argv: string[]): SimpleCommand[] | null {
  if (argv.length === 0) return null;
  return unwrapShell(argv, 0);
}
