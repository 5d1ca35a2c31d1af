// A deploy works from a fresh clone (issue 38, item 4): `wrangler deploy --env production` needs the
// console in web/dist ([assets]), which a clone does not have, so wrangler.toml's [build] makes it.
// The clone is of this repository's HEAD, with its node_modules linked in (what `npm ci` would give);
// the dry run builds everything a deploy would and uploads nothing.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, wranglerEnv } from "../../scripts/local-gateway";

const dir = mkdtempSync(join(tmpdir(), "acp-clone-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("deploy from a fresh clone", () => {
  it("`npx wrangler deploy --dry-run --env production` builds the console and the Worker", () => {
    const clone = join(dir, "clone");
    execFileSync("git", ["clone", "--quiet", ROOT, clone]);
    symlinkSync(join(ROOT, "node_modules"), join(clone, "node_modules"));
    expect(existsSync(join(clone, "web", "dist")), "precondition: a clone has no built console").toBe(false);
    const out = join(dir, "out");
    const deploy = spawnSync("npx", ["wrangler", "deploy", "--dry-run", "--env", "production", "--outdir", out], {
      cwd: clone,
      env: wranglerEnv(),
      encoding: "utf8",
    });
    expect(deploy.status, `${deploy.stdout}${deploy.stderr}`).toBe(0);
    expect(readdirSync(join(clone, "web", "dist")).sort()).toEqual(
      ["callback.html", "console.css", "console.css.map", "console.js", "console.js.map", "favicon.svg", "index.html"].sort(),
    );
    expect(existsSync(join(out, "index.js")), "the Worker was bundled").toBe(true);
  }, 120_000);
});
