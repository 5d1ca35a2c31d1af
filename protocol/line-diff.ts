// A line diff for showing an edit to a person: the longest common subsequence of lines, with a
// size cap. Past the cap the old text is shown removed and the new text added (still complete).

export type DiffLine = { op: " " | "-" | "+"; text: string };

const MAX_CELLS = 1_000_000;

export function lineDiff(oldText: string | null, newText: string): DiffLine[] {
  const a = oldText === null || oldText === "" ? [] : oldText.split("\n");
  const b = newText === "" ? [] : newText.split("\n");
  if (a.length * b.length > MAX_CELLS) {
    return [...a.map((text) => ({ op: "-" as const, text })), ...b.map((text) => ({ op: "+" as const, text }))];
  }
  // lcs[i][j]: length of the LCS of a[i..] and b[j..].
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    const row = lcs[i] as number[];
    const below = lcs[i + 1] as number[];
    for (let j = b.length - 1; j >= 0; j--) row[j] = a[i] === b[j] ? (below[j + 1] ?? 0) + 1 : Math.max(below[j] ?? 0, row[j + 1] ?? 0);
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ op: " ", text: a[i] as string });
      i++;
      j++;
    } else if ((lcs[i + 1]?.[j] ?? 0) >= (lcs[i]?.[j + 1] ?? 0)) out.push({ op: "-", text: a[i++] as string });
    else out.push({ op: "+", text: b[j++] as string });
  }
  while (i < a.length) out.push({ op: "-", text: a[i++] as string });
  while (j < b.length) out.push({ op: "+", text: b[j++] as string });
  return out;
}
