// Summaries of timings: median, p99, max (ms) and throughput.

export interface Summary {
  n: number;
  median: number;
  p99: number;
  max: number;
}

export function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { n: sorted.length, median: round(at(0.5)), p99: round(at(0.99)), max: round(sorted.at(-1) ?? 0) };
}

export const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;
export const ratio = (a: number, b: number) => (b > 0 ? round(a / b, 2) : null);
export const now = () => performance.now();
