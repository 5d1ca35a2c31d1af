// Headless Chromium for the e2e tests: Debian's /usr/bin/chromium driven by playwright-core (.ci/run
// installs it), offline and quiet, and the folder the README's screenshots are written to.

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { ROOT } from "../../scripts/local-gateway";

/** docs/screenshots, made if missing: the README shows what the browser tests write there. */
export function screenshotsDir(): string {
  const dir = join(ROOT, "docs", "screenshots");
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

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
}
