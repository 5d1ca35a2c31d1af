// A line diff for showing an edit to a person — the approval page (worker/routes/approve-page.tsx)
// and the console (web/) alike: the longest common subsequence of lines, with a size cap. Past the
// cap (4M cells, 16 MB of table) the old text is shown removed and the new text added (still
// complete), so a huge edit costs a page nothing but its length.

export interface DiffLine {
  op: " " | "-" | "+";
  text: string;
}

const MAX_CELLS = 4_000_000;

export function lineDiff(oldText: string | null, newText: string): DiffLine[] {
  const a = oldText === null || oldText === "" ? [] : oldText.split("\n");
  const b = newText === "" ? [] : newText.split("\n");
  if (a.length * b.length > MAX_CELLS)
    return [...a.map((text) => ({ op: "-" as const, text })), ...b.map((text) => ({ op: "+" as const, text }))];
  // lcs[i][j]: the common subsequence length of a[i..] and b[j..].
  const width = b.length + 1;
  const lcs = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i * width + j] =
        a[i] === b[j] ? (lcs[(i + 1) * width + j + 1] ?? 0) + 1 : Math.max(lcs[(i + 1) * width + j] ?? 0, lcs[i * width + j + 1] ?? 0);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ op: " ", text: a[i] as string });
      i++;
      j++;
    } else if ((lcs[(i + 1) * width + j] ?? 0) >= (lcs[i * width + j + 1] ?? 0)) out.push({ op: "-", text: a[i++] as string });
    else out.push({ op: "+", text: b[j++] as string });
  }
  while (i < a.length) out.push({ op: "-", text: a[i++] as string });
  while (j < b.length) out.push({ op: "+", text: b[j++] as string });
  return out;
}
