// Newline-delimited JSON-RPC on a byte stream: one message per line.

import type { Readable } from "node:stream";
import { displayString } from "../protocol/display-text.ts";

/** Calls `onLine` with every complete, non-empty line; a partial line waits for its end. */
export function readLines(stream: Readable, onLine: (line: string) => void): void {
  let buffer = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    buffer += chunk;
    let newline = buffer.indexOf("\n");
    while (newline >= 0) {
      const line = buffer.slice(0, newline).replace(/\r$/, "");
      buffer = buffer.slice(newline + 1);
      if (line.trim() !== "") onLine(line);
      newline = buffer.indexOf("\n");
    }
  });
}

/** A line's JSON-RPC message, or undefined for a line that is not JSON (its bytes are relayed as they are either way). */
export function messageOf(text: string): Record<string, any> | undefined {
  try {
    return JSON.parse(text) as Record<string, any>;
  } catch {
    return undefined;
  }
}

/** One line to the terminal: a message may carry text from the gateway or an agent, so controls are shown as symbols (decision 0022). */
export function log(message: string): void {
  process.stderr.write(`[acp-gateway] ${displayString(message)}\n`);
}

/** Exponential backoff with jitter: 250 ms doubling, capped. */
export function backoff(attempt: number, capMs = 10_000): number {
  const base = Math.min(capMs, 250 * 2 ** attempt);
  return Math.round(base / 2 + Math.random() * (base / 2));
}
