// Builds the web console into web/dist/: the Preact app bundled by esbuild (TypeScript, JSX, marked,
// the gateway's own rule derivation from protocol/), its stylesheet, index.html and the favicon.
// Everything the page needs is in dist/: nothing is fetched from elsewhere at run time.
// Run by `npm start` (scripts/start.ts), every vitest run (vitest.config.ts: the workerd and e2e
// projects serve it), `npm run bench`, `npm run build:web` and wrangler's [build] step; takes well
// under a second. Only a file whose bytes changed is written (in place, so a gateway already serving
// dist/ never sees it missing): a running `wrangler dev` watches dist/ and reloads, dropping every
// socket, on any write, so a build that changes nothing must write nothing.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const WEB = dirname(fileURLToPath(import.meta.url));
const DIST = join(WEB, "dist");

export async function buildConsole(): Promise<void> {
  mkdirSync(DIST, { recursive: true });
  const result = await build({
    entryPoints: { console: join(WEB, "src", "main.tsx") },
    outdir: DIST,
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: true,
    jsx: "automatic",
    jsxImportSource: "preact",
    logLevel: "warning",
    legalComments: "none",
    write: false,
  });
  for (const file of result.outputFiles) writeIfChanged(file.path, file.contents);
  for (const file of ["index.html", "favicon.svg"]) writeIfChanged(join(DIST, file), readFileSync(join(WEB, file)));
  // The sign-in callback (/callback, web/src/sign-in.ts): the same page, served at the redirect URI.
  writeIfChanged(join(DIST, "callback.html"), readFileSync(join(WEB, "index.html")));
}

function writeIfChanged(path: string, contents: Uint8Array): void {
  let current: Buffer | undefined;
  try {
    current = readFileSync(path);
  } catch {
    // not built yet
  }
  if (current?.equals(contents)) return;
  writeFileSync(path, contents);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  await buildConsole();
  process.stdout.write(`web console built into web/dist in ${Math.round(performance.now() - started)} ms\n`);
}
