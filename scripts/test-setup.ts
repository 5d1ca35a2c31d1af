// The suite's set-up step (package.json "pretest" and "pretest:fuzz", so the README's `npm install &&
// npm test` needs nothing installed by hand; decision 0043): what the tests drive for real that a
// machine of this kind may lack — strace and the tools the real-tool differential runs under it
// (test/unit/fuzz/tools-sandbox.ts), and the libraries the packaged Chromium links (test/e2e/browser.ts)
// — installed from Debian's packages when this runs as root, with one line saying so. Not root, or no
// apt-get, or the install fails: one line naming the command, and the test that needs it fails naming
// it too (never a silent skip). It never fails the run itself: the other tests still run.

import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { missingPackages, setupStep } from "./system-needs.ts";

function onPath(program: string): boolean {
  return (process.env.PATH ?? "").split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, program), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function aptGet(args: string[]): { ok: boolean; output: string } {
  const r = spawnSync("apt-get", ["-o", "DPkg::Lock::Timeout=300", ...args], {
    encoding: "utf8",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return { ok: r.status === 0, output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

const ldconfig = onPath("ldconfig") ? "ldconfig" : "/sbin/ldconfig";
const linkerCache = spawnSync(ldconfig, ["-p"], { encoding: "utf8" }).stdout ?? "";
const step = setupStep(missingPackages(onPath, linkerCache), process.getuid?.() === 0 && onPath("apt-get"));
if (step) {
  console.log(step.say);
  if (step.install.length > 0) {
    const install = ["install", "-y", "-qq", "--no-install-recommends", ...step.install];
    // A machine's package lists may be missing or stale: refresh them only when the install needs it.
    let result = aptGet(install);
    if (!result.ok) result = aptGet(["update", "-qq"]).ok ? aptGet(install) : result;
    if (!result.ok)
      console.log(
        `${result.output.trim().split("\n").slice(-5).join("\n")}\ntest set-up: the install failed; the tests that use them fail until apt-get install -y ${step.install.join(" ")} succeeds`,
      );
  }
}
