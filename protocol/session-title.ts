// A session the agent has not named is called by its first prompt (the sessions list and the console's
// header show it): the gateway names it as the prompt arrives (durable-objects/session/session-info.ts),
// and the console that sent the prompt names its header the same way at once, without asking.

import { isObject } from "./jsonrpc";

/** The longest title taken from a prompt, in characters (an agent's own title is kept as it sent it). */
const PROMPT_TITLE_CHARS = 80;

/** A title from a prompt's first text block: its first line, whitespace folded, cut at a word near 80 characters. */
export function titleFromPrompt(blocks: unknown[]): string | null {
  const block = blocks.find((b) => isObject(b) && b.type === "text" && typeof b.text === "string" && b.text.trim() !== "");
  if (!isObject(block) || typeof block.text !== "string") return null;
  const line = block.text.trim().split("\n")[0]?.replace(/\s+/g, " ").trim() ?? "";
  const chars = Array.from(line); // by code point: a cut never splits a surrogate pair
  if (chars.length <= PROMPT_TITLE_CHARS) return line || null;
  const cut = chars.slice(0, PROMPT_TITLE_CHARS).join("");
  const space = cut.lastIndexOf(" ");
  return `${space > PROMPT_TITLE_CHARS / 2 ? cut.slice(0, space) : cut}…`;
}
