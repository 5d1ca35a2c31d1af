// npm test's set-up step (scripts/test-setup.ts, decision 0043): on a new machine it finds what the
// suite runs from the system and is missing, installs it only where it can, and otherwise names the
// one command — never nothing, so no test that needs a tool is skipped in silence.
import { describe, expect, it } from "vitest";
import { LIBRARIES, PROGRAMS, missingPackages, setupStep } from "../../scripts/system-needs.ts";

const everyLibrary = Object.keys(LIBRARIES)
  .map((lib) => `\t${lib} (libc6,x86-64) => /lib/x86_64-linux-gnu/${lib}`)
  .join("\n");

describe("the suite's set-up step", () => {
  it("finds nothing missing on a machine that has every program and library", () => {
    expect(missingPackages(() => true, everyLibrary)).toEqual([]);
    expect(setupStep([], true)).toBeUndefined();
  });

  it("finds strace missing on a new machine that has the rest (the real-tool differential runs under it)", () => {
    expect(missingPackages((p) => p !== "strace", everyLibrary)).toEqual(["strace"]);
  });

  it("names the packaged Chromium's missing libraries by the Debian package that has them", () => {
    const withoutNss = everyLibrary
      .split("\n")
      .filter((line) => !line.includes("libnss3.so"))
      .join("\n");
    expect(missingPackages(() => true, withoutNss)).toEqual(["libnss3"]);
    // A library whose name is a prefix of one present is still missing.
    expect(missingPackages(() => true, "\tlibnss3.so.1 (libc6,x86-64) => /x\n")).toEqual(["libnss3", "libnspr4", "libexpat1"]);
  });

  it("counts no library missing when there is no linker cache to read (the browser's own error names them then)", () => {
    expect(missingPackages(() => false, "")).toEqual(Object.values(PROGRAMS));
  });

  it("as root with apt-get, installs exactly what is missing and says so in one line", () => {
    const step = setupStep(["strace", "libnss3"], true);
    expect(step?.install).toEqual(["strace", "libnss3"]);
    expect(step?.say).toBe(
      "test set-up: installing strace, libnss3 from Debian's packages (apt-get install -y strace libnss3), which the tests run for real",
    );
  });

  it("otherwise installs nothing and names the one command that fixes it", () => {
    const step = setupStep(["strace"], false);
    expect(step?.install).toEqual([]);
    expect(step?.say).toBe("test set-up: strace missing; the tests that use them fail until you run: sudo apt-get install -y strace");
  });
});
