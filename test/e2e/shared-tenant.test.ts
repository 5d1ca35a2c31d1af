// The end-to-end files that share the gateway's dev tenant (its sessions list, its rules, its keys'
// rates) run one after another, as one file: two at once could see each other's sessions. As one file
// they run beside the unit and workerd files instead of after them, in a tail where one core idled.
// Each file's own hooks stay its own (its import runs inside its describe). Run one of them alone with
// `E2E_FILES=1 npx vitest run --project e2e-files test/e2e/<name>.test.ts`.
import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";

/** In the order they ran as files. */
const FILES = [
  "console-browser",
  "http-transport",
  "gateway",
  "readme-snippets",
  "console-render",
  "console-browser-history",
  "console-resume",
  "session-attach",
  "cli",
  "dial-out",
  "audit-verify",
  "start-refused",
  "trace",
  "deploy-from-clone",
] as const;

/** The files with tenants of their own (vitest.config.ts `OWN_TENANT`), which run as files of their own. */
const OWN_TENANT = [
  "people",
  "console-signin",
  "approvals-link",
  "console-settings",
  "console-what-is-asked",
  "console-mode-change",
  "console-prompt-queue",
];

it("every end-to-end file that shares the dev tenant is run here (none left out)", () => {
  const here = readdirSync(new URL(".", import.meta.url))
    .filter((name) => name.endsWith(".test.ts") && name !== "shared-tenant.test.ts")
    .map((name) => name.slice(0, -".test.ts".length))
    .filter((name) => !OWN_TENANT.includes(name));
  expect([...FILES].sort()).toEqual(here.sort());
});

for (const file of FILES) describe(`${file}.test.ts`, async () => void (await import(`./${file}.test.ts`)));
