// Random identifiers. crypto.getRandomValues exists in workerd and in Node.

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** A random id such as `key_3f9k2…`: a readable prefix and 20 base-36 characters (~103 bits). */
export function randomId(prefix: string, length = 20): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  let out = "";
  for (const b of bytes) out += ALPHABET[b % 36];
  return `${prefix}_${out}`;
}

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
