// Canonical JSON (keys sorted, no whitespace) and its SHA-256, for `exact` rules: the operation
// { kind, name, rawInput } hashed the same way whatever order the agent wrote its keys in.

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

export async function exactHash(toolCall: Record<string, unknown>): Promise<string> {
  const operation = { kind: toolCall.kind ?? null, name: toolCall.name ?? null, rawInput: toolCall.rawInput ?? null };
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonicalJson(operation)));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
