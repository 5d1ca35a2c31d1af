// Headless Chromium for the e2e tests: Debian's /usr/bin/chromium driven by playwright-core (.ci/run
// installs it), offline and quiet, and the folder the browser tests write their screenshots to.

import { mkdirSync } from "node:fs";
import { join } from "node:path";
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

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
}
