// What a person may safely read of a string that came from an agent (decision 0022). Agent text is
// hostile: a terminal escape (`\u001b[2K\u001b[1A`), a bidi override (`\u202e`) or an invisible
// character can make a command read as another. Every such code point is shown as a visible symbol
// instead, and the caller learns that something was shown so it can say so beside the text:
//
// - C0 controls as their U+2400 picture (`\u001b` → `␛`), DEL as `␡`; in multi-line text (diffs,
//   messages, output) `\n`, `\t` and a `\r` before `\n` stay as they are;
// - C1 controls, bidi controls, every format character (Unicode Cf: zero-width, soft hyphen, tags),
//   line and paragraph separators, invisible fillers, variation selectors and lone surrogates as a
//   marker naming the code point, `⟨U+202E⟩`.
//
// Two things are kept so ordinary text reads as written: a ZWJ joining two emoji, and one variation
// selector right after an emoji (❤️). Both are decided from the text already emitted and the next
// code point, which this function never changes, so a second pass changes nothing (idempotent).
// The symbols themselves (`␛`, `⟨`) are ordinary printable characters and pass through: an agent
// that writes them shows nothing hidden.

export interface DisplayText {
  /** The text with every unsafe code point replaced by a visible symbol. */
  text: string;
  /** How many code points were replaced: more than 0 means the UI says so beside the text. */
  escaped: number;
}

export interface DisplayOptions {
  /** Keep `\n`, `\t` and `\r\n` (diffs, messages, terminal output). Single-line fields show them as `␊`, `␉`, `␍`. */
  multiline?: boolean;
}

/** The sentence the UI shows beside text in which something was replaced. */
export const DISPLAY_WARNING =
  "This text contained control or invisible characters (terminal escapes, direction overrides, zero-width characters); they are shown as symbols such as ␛ or ⟨U+202E⟩.";

// Any code point that may be replaced; the exceptions are decided per occurrence below. Built from
// a string: a literal would be a class of the very characters a reader cannot see.
const SUSPECT_SOURCE = [
  "\\u0000-\\u001f\\u007f-\\u009f", // C0, DEL, C1
  "\\p{Cf}", // format: bidi controls, zero-width, soft hyphen, BOM, tags
  "\\u2028\\u2029", // line and paragraph separators
  "\\u034f\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f\\u3164\\uffa0", // invisible joiners and fillers
  "\\ufe00-\\ufe0f\\u{e0100}-\\u{e01ef}\\u{e0000}-\\u{e007f}", // variation selectors, the tag block
  "\\p{Cs}", // lone surrogates
].join("");
// The class holds combining characters on purpose: each is matched alone, never as part of another.
// eslint-disable-next-line no-misleading-character-class
const SUSPECT = new RegExp(`[${SUSPECT_SOURCE}]`, "u");
// eslint-disable-next-line no-misleading-character-class
const SUSPECT_ALL = new RegExp(`[${SUSPECT_SOURCE}]`, "gu");
const EMOJI = /^\p{Emoji}$/u;
const PICTOGRAPHIC = /^[\p{Extended_Pictographic}\u{1f3fb}-\u{1f3ff}]$/u;

/** The visible form of one replaced code point. */
export function symbolFor(cp: number): string {
  if (cp < 0x20) return String.fromCodePoint(0x2400 + cp);
  if (cp === 0x7f) return "\u2421";
  return `⟨U+${cp.toString(16).toUpperCase().padStart(4, "0")}⟩`;
}

export function displayText(raw: string, options: DisplayOptions = {}): DisplayText {
  if (!SUSPECT.test(raw)) return { text: raw, escaped: 0 };
  const multiline = options.multiline === true;
  let escaped = 0;
  // Where the last variation selector that was kept ends: a ZWJ may follow only a kept one.
  let keptSelectorEnd = -1;
  const text = raw.replace(SUSPECT_ALL, (ch: string, offset: number, whole: string) => {
    const cp = ch.codePointAt(0) as number;
    if (keep(cp, whole, offset, ch.length, multiline, keptSelectorEnd === offset)) {
      if (cp === 0xfe0f || cp === 0xfe0e) keptSelectorEnd = offset + ch.length;
      return ch;
    }
    escaped++;
    return symbolFor(cp);
  });
  return { text, escaped };
}

/** The text alone, for places that show the warning elsewhere or not at all (an attribute, a label). */
export function displayString(raw: string, options?: DisplayOptions): string {
  return displayText(raw, options).text;
}

function keep(cp: number, whole: string, offset: number, length: number, multiline: boolean, afterKeptSelector: boolean): boolean {
  if (multiline && (cp === 0x0a || cp === 0x09)) return true;
  if (multiline && cp === 0x0d) return whole.charCodeAt(offset + 1) === 0x0a;
  // The code point before. An emoji or pictograph is never replaced, so one seen here is as emitted.
  const before = previousCodePoint(whole, offset);
  if (cp === 0x200d) {
    const after = whole.codePointAt(offset + length);
    const joinsAfter = after !== undefined && PICTOGRAPHIC.test(String.fromCodePoint(after));
    const joinsBefore = before !== undefined && (PICTOGRAPHIC.test(before) || afterKeptSelector);
    return joinsAfter && joinsBefore;
  }
  if (cp === 0xfe0e || cp === 0xfe0f)
    return before !== undefined && EMOJI.test(before) && !/^[0-9#*]$/.test(before) ? true : keycap(whole, offset, before);
  return false;
}

/** `1️⃣`: a digit, `#` or `*`, VS16, then the combining keycap. A bare digit keeps no selector. */
function keycap(whole: string, offset: number, before: string | undefined): boolean {
  return before !== undefined && /^[0-9#*]$/.test(before) && whole.charCodeAt(offset + 1) === 0x20e3;
}

function previousCodePoint(whole: string, offset: number): string | undefined {
  if (offset === 0) return undefined;
  const low = whole.charCodeAt(offset - 1);
  if (low >= 0xdc00 && low <= 0xdfff && offset >= 2) {
    const high = whole.charCodeAt(offset - 2);
    if (high >= 0xd800 && high <= 0xdbff) return whole.slice(offset - 2, offset);
  }
  return whole[offset - 1];
}
