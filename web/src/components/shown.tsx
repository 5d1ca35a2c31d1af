// Agent text as a person may safely read it (protocol/display-text.ts, decision 0022): terminal
// escapes, direction overrides and invisible characters are shown as symbols (␛, ⟨U+202E⟩), and a
// warning beside the text says so. Every place the console shows words that came from an agent (or
// from another client) goes through here or through `shown`.

import { DISPLAY_WARNING, type DisplayText, displayText } from "../../../protocol/display-text";

/** The text to show, and how many code points were replaced (for a warning beside it). */
export function shown(raw: string, multiline = false): DisplayText {
  return displayText(raw, { multiline });
}

/** Text inline, followed by a short visible warning when something in it was replaced. */
export function Safe({ text, multiline }: { text: string; multiline?: boolean }) {
  const s = shown(text, multiline);
  return (
    <>
      {s.text}
      {s.escaped > 0 && (
        <span class="display-warn" role="note" title={DISPLAY_WARNING}>
          {" "}
          ⚠ contained control characters, shown as ␛ / ⟨U+…⟩
        </span>
      )}
    </>
  );
}

/** The warning as its own paragraph, above a block (a command, a diff, output) in which something was replaced. */
export function DisplayWarning({ escaped }: { escaped: number }) {
  if (escaped === 0) return null;
  return (
    <p class="warn display-warn" role="note">
      ⚠ {DISPLAY_WARNING}
    </p>
  );
}
