// Small formatting helpers shared by the views.

export function ago(at: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 45) return "just now";
  if (s < 90 * 60) return `${Math.max(1, Math.round(s / 60))} min ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h ago`;
  return new Date(at).toLocaleDateString();
}

export function dateTime(at: number): string {
  return new Date(at).toLocaleString();
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
