// Headless Chromium for the e2e tests, driven by playwright-core, offline and quiet, and the folder the
// browser tests write their screenshots to. The browser arrives with `npm install` (decision 0043):
// @sparticuz/chromium ships a headless-shell build inside its registry tarball, so a new machine needs
// no download and no system package. Debian's /usr/bin/chromium is used only if that one cannot start.

import { randomUUID } from "node:crypto";
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createBrotliDecompress } from "node:zlib";
import { type Browser, chromium } from "playwright-core";
import { ROOT } from "../../scripts/local-gateway";

/**
 * Where the browser tests write their screenshots: test-results/screenshots (untracked), so a test
 * run never rewrites a tracked file; `SCREENSHOTS_DIR=docs/screenshots npm test` refreshes the
 * README's pictures on purpose.
 */
export function screenshotsDir(): string {
  const dir = join(ROOT, process.env.SCREENSHOTS_DIR ?? join("test-results", "screenshots"));
  mkdirSync(dir, { recursive: true });
  return dir;
}

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const DEBIAN_CHROMIUM = "/usr/bin/chromium";

/** The libraries the packaged binary links that a Debian machine may lack, by the package that has them. */
const LIBRARY_PACKAGES: Record<string, string> = {
  "libnss3.so": "libnss3",
  "libnssutil3.so": "libnss3",
  "libnspr4.so": "libnspr4",
  "libplc4.so": "libnspr4",
  "libplds4.so": "libnspr4",
  "libexpat.so.1": "libexpat1",
};

const require = createRequire(import.meta.url);

let unpacked: Promise<string> | undefined;

/**
 * The packaged browser, unpacked once per version to <tmp>/acp-gateway-chromium-<version> (209 MB,
 * about 5 s). Not the package's own executablePath(): that one writes every version to the same
 * /tmp/chromium and takes a half-written file there for a finished one, while three test files here
 * (and other checkouts on a shared machine) start browsers at once. This one writes beside the final
 * name and renames into place, so no one ever runs half a binary.
 */
function packagedChromium(): Promise<string> {
  unpacked ??= (async () => {
    const pkg = join(dirname(require.resolve("@sparticuz/chromium")), "..");
    const { version } = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as { version: string };
    const target = join(tmpdir(), `acp-gateway-chromium-${version}`);
    if (existsSync(target)) return target;
    const part = `${target}.${process.pid}-${randomUUID()}.part`;
    try {
      await pipeline(createReadStream(join(pkg, "bin", "chromium.br")), createBrotliDecompress(), createWriteStream(part, { mode: 0o755 }));
      await rename(part, target);
    } catch (error) {
      await rm(part, { force: true }); // a disk that filled mid-way keeps no 200 MB remnant
      throw error;
    }
    return target;
  })();
  return unpacked;
}

/** The packaged Chromium; Debian's if present and the packaged one cannot start; else an error naming the fix. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = await packagedChromium();
  try {
    return await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  } catch (error) {
    const why = `the packaged Chromium (@sparticuz/chromium, ${executablePath}) did not start: ${String(error).split("\n")[0]}`;
    if (existsSync(DEBIAN_CHROMIUM)) {
      console.warn(`${why}; using ${DEBIAN_CHROMIUM}`);
      return chromium.launch({ executablePath: DEBIAN_CHROMIUM, args: CHROMIUM_ARGS });
    }
    throw new Error(`${why}. ${fixFor(executablePath)}`, { cause: error });
  }
}

/** The one command that makes the packaged binary start: the libraries ldd cannot find, else Debian's Chromium. */
function fixFor(executablePath: string): string {
  const ldd = spawnSync("ldd", [executablePath], { encoding: "utf8" }).stdout ?? "";
  const missing = [...ldd.matchAll(/^\s*(\S+) => not found/gm)].map((m) => m[1] as string);
  if (missing.length === 0) return `Install Debian's instead: apt-get install -y chromium`;
  const packages = [...new Set(missing.map((lib) => LIBRARY_PACKAGES[lib] ?? lib))];
  return `It lacks ${missing.join(", ")}: apt-get install -y ${packages.join(" ")}`;
}
