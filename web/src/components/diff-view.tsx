// An edit as a line diff: each line on its own, added and removed marked for eyes and screen readers.
// Used by a tool call's card and by a permission card's unseen changes (unseen-changes.tsx).

import { lineDiff } from "../../../protocol/line-diff";
import { DisplayWarning, Safe, shown } from "./shown";

export function DiffView({ path, oldText, newText }: { path: string; oldText: string | null; newText: string }) {
  // Each line is shown on its own: a line break is the diff's, any other control is a symbol.
  const lines = lineDiff(oldText, newText).map((l) => ({ op: l.op, ...shown(l.text, true) }));
  const escaped = lines.reduce((n, l) => n + l.escaped, 0);
  return (
    <figure class="diff" aria-label={`Diff of ${shown(path).text}`}>
      <figcaption>
        {oldText === null ? "New file " : "Changes to "}
        <code class="path">
          <Safe text={path} />
        </code>
      </figcaption>
      <DisplayWarning escaped={escaped} />
      <pre class="code">
        {lines.map((l, i) => (
          <span key={i} class={`line ${l.op === "+" ? "add" : l.op === "-" ? "del" : "same"}`}>
            <span class="op" aria-label={l.op === "+" ? "added" : l.op === "-" ? "removed" : undefined}>
              {l.op}
            </span>
            {l.text}
            {"\n"}
          </span>
        ))}
      </pre>
    </figure>
  );
}
