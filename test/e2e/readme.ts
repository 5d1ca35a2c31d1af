// README.md's code blocks as the tests run them: taken from the README's own text, so a snippet
// that stops working as written fails a test.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../../scripts/local-gateway";

/** The code blocks of one language under a heading (up to the next heading of the same or a higher level), as the README has them. */
export function blocksAfter(heading: string, lang: string): string[] {
  const lines = readFileSync(join(ROOT, "README.md"), "utf8").split("\n");
  const level = /^#+/.exec(heading)?.[0].length ?? 2;
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`README.md has no heading ${heading}`);
  const blocks: string[] = [];
  let block: string[] | null = null;
  let fenced = false;
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith("```")) {
      if (fenced && block) blocks.push(block.join("\n") + "\n");
      block = !fenced && line === "```" + lang ? [] : null;
      fenced = !fenced;
      continue;
    }
    if (fenced) {
      block?.push(line);
      continue;
    }
    const heading = /^(#+) /.exec(line);
    if (heading && heading[1]!.length <= level) break;
  }
  if (blocks.length === 0) throw new Error(`no ${lang} block under ${heading}`);
  return blocks;
}
