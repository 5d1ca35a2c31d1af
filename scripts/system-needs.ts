// What the test suite runs from the system rather than from npm, and what its set-up step
// (scripts/test-setup.ts) does about what is missing: pure, so each case is tested without root.

/** Each program the suite runs that a new machine may lack, and the Debian package that has it. */
export const PROGRAMS: Record<string, string> = {
  strace: "strace",
  git: "git",
  make: "make",
  bash: "bash",
  cargo: "cargo",
  // Decision 0068: a step that detaches through tmux, run for real (test/unit/outlives.test.ts).
  tmux: "tmux",
  setsid: "util-linux",
};

/** The shared libraries the packaged Chromium links beyond libc (`ldd` of its binary), by package. */
export const LIBRARIES: Record<string, string> = { "libnss3.so": "libnss3", "libnspr4.so": "libnspr4", "libexpat.so.1": "libexpat1" };

/**
 * The Debian packages to install: programs not on the PATH, and libraries absent from the dynamic
 * linker's cache (`ldconfig -p`; none counted missing when there is no cache to read).
 */
export function missingPackages(onPath: (program: string) => boolean, linkerCache: string): string[] {
  const programs = Object.entries(PROGRAMS).filter(([program]) => !onPath(program));
  const libraries = linkerCache ? Object.entries(LIBRARIES).filter(([lib]) => !linkerCache.includes(`${lib} (`)) : [];
  return [...new Set([...programs, ...libraries].map(([, pkg]) => pkg))];
}

/** What the set-up step does: nothing, or one line and, where it can install, the packages. */
export function setupStep(missing: string[], canInstall: boolean): { say: string; install: string[] } | undefined {
  if (missing.length === 0) return undefined;
  const command = `apt-get install -y ${missing.join(" ")}`;
  if (!canInstall)
    return { say: `test set-up: ${missing.join(", ")} missing; the tests that use them fail until you run: sudo ${command}`, install: [] };
  return {
    say: `test set-up: installing ${missing.join(", ")} from Debian's packages (${command}), which the tests run for real`,
    install: missing,
  };
}
