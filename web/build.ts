// Builds the web console into web/dist/: the Preact app bundled by esbuild (TypeScript, JSX, marked,
// the gateway's own rule derivation from protocol/), its stylesheet, index.html and the favicon.
// Everything the page needs is in dist/: nothing is fetched from elsewhere at run time.
// Run by `npm start` (scripts/start.ts), every vitest run (vitest.config.ts: the workerd and e2e
// projects serve it), `npm run bench` and `npm run build:web`; takes well under a second. Files are
// overwritten in place, so a gateway already serving dist/ never sees it missing.

import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const WEB = dirname(fileURLToPath(import.meta.url));
const DIST = join(WEB, "dist");

export async function buildConsole(): Promise<void> {
  mkdirSync(DIST, { recursive: true });
  await build({
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
  });
  for (const file of ["index.html", "favicon.svg"]) copyFileSync(join(WEB, file), join(DIST, file));
  // The sign-in callback (/callback, web/src/sign-in.ts): the same page, served at the redirect URI.
  copyFileSync(join(WEB, "index.html"), join(DIST, "callback.html"));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  await buildConsole();
  process.stdout.write(`web console built into web/dist in ${Math.round(performance.now() - started)} ms\n`);
}
