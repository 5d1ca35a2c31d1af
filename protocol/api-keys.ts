// API keys: minted once, shown once, stored as a SHA-256 hash with a short prefix that identifies
// the key in lists. The one place keys are made (the API, the tests, the local dev seed).

// With its extension: Node (scripts/local-gateway.ts seeds the dev keys) imports this file too.
import type { KeyKind } from "../core/principal.ts";
import { randomId, sha256Hex } from "./ids.ts";

/** How many characters of a key are kept in the clear, to recognise it in lists. */
const PREFIX_LENGTH = 16;

export interface MintedKey {
  id: string;
  /** The secret: returned to the caller once, never stored. */
  key: string;
  prefix: string;
  hash: string;
}

export async function mintKey(kind: KeyKind): Promise<MintedKey> {
  return keyRecord(randomId("key"), randomId(`acp_${kind}`, 40));
}

/** The stored form of a given key (the local dev seed uses fixed keys). */
export async function keyRecord(id: string, key: string): Promise<MintedKey> {
  return { id, key, prefix: key.slice(0, PREFIX_LENGTH), hash: await sha256Hex(key) };
}
