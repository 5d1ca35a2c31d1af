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

/** Each program the suite runs that a new machine may lack, and the Debian package that has it. */
const PROGRAMS: Record<string, string> = { strace: "strace", git: "git", make: "make", bash: "bash", cargo: "cargo" };

/** The shared libraries the packaged Chromium links beyond libc (`ldd` of its binary), by package. */
const LIBRARIES: Record<string, string> = { "libnss3.so": "libnss3", "libnspr4.so": "libnspr4", "libexpat.so.1": "libexpat1" };

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

/** The packages whose libraries the dynamic linker's cache lacks (none known when there is no ldconfig to ask). */
function missingLibraries(): string[] {
  const ldconfig = ["ldconfig", "/sbin/ldconfig"].find((p) => p.startsWith("/") || onPath(p));
  const cache = ldconfig ? (spawnSync(ldconfig, ["-p"], { encoding: "utf8" }).stdout ?? "") : "";
  if (!cache) return [];
  return Object.entries(LIBRARIES)
    .filter(([lib]) => !cache.includes(`${lib} (`))
    .map(([, pkg]) => pkg);
}

function aptGet(args: string[]): { ok: boolean; output: string } {
  const r = spawnSync("apt-get", ["-o", "DPkg::Lock::Timeout=300", ...args], {
    encoding: "utf8",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return { ok: r.status === 0, output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

const missing = [
  ...new Set([
    ...Object.entries(PROGRAMS)
      .filter(([program]) => !onPath(program))
      .map(([, pkg]) => pkg),
    ...missingLibraries(),
  ]),
];
if (missing.length > 0) {
  const command = `apt-get install -y ${missing.join(" ")}`;
  if (process.getuid?.() !== 0 || !onPath("apt-get")) {
    console.log(`test set-up: ${missing.join(", ")} missing; the tests that use them fail until you run: sudo ${command}`);
  } else {
    console.log(`test set-up: installing ${missing.join(", ")} from Debian's packages (${command}), which the tests run for real`);
    const install = ["install", "-y", "-qq", "--no-install-recommends", ...missing];
    // A machine's package lists may be missing or stale: refresh them only when the install needs it.
    let result = aptGet(install);
    if (!result.ok) result = aptGet(["update", "-qq"]).ok ? aptGet(install) : result;
    if (!result.ok)
      console.log(
        `${result.output.trim().split("\n").slice(-5).join("\n")}\ntest set-up: the install failed; the tests that use them fail until ${command} succeeds`,
      );
  }
}
