// npm run bundle: builds the Worker as `wrangler deploy` would (`--dry-run`, nothing uploaded, no
// network) and fails when its compressed size passes the Workers limit of the smallest plan it must
// deploy on (Free: 3 MiB gzip; Paid: 10 MiB — set WORKER_SIZE_LIMIT_MIB=10 to check against Paid).
// Prints the size and the headroom, so a change that grows the bundle shows it in review. Builds the
// production environment too (wrangler.toml [env.production]), so a config that only fails there
// fails here first.

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ROOT } from "./local-gateway.ts";

const limitMiB = Number(process.env.WORKER_SIZE_LIMIT_MIB ?? 3);
const out = mkdtempSync(join(tmpdir(), "acp-bundle-"));
try {
  const wrangler = join(ROOT, "node_modules", ".bin", "wrangler");
  for (const env of [[], ["--env", "production"]]) {
    const built = spawnSync(wrangler, ["deploy", "--dry-run", "--outdir", out, ...env], {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
      encoding: "utf8",
    });
    if (built.status !== 0) {
      process.stderr.write(
        `${built.stdout}${built.stderr}\nwrangler deploy --dry-run ${env.join(" ")} failed: the Worker does not build.\n`,
      );
      process.exit(1);
    }
  }
  const bundle = readFileSync(join(out, "index.js"));
  const gzipMiB = gzipSync(bundle, { level: 9 }).length / 2 ** 20;
  const line = `Worker bundle: ${(bundle.length / 2 ** 20).toFixed(2)} MiB, ${gzipMiB.toFixed(2)} MiB gzip (limit ${limitMiB} MiB gzip)`;
  if (gzipMiB > limitMiB) {
    process.stderr.write(`${line}: too large to deploy. Find what grew with \`npx wrangler deploy --dry-run --outdir dist --metafile\`.\n`);
    process.exit(1);
  }
  process.stdout.write(`${line}: ${((1 - gzipMiB / limitMiB) * 100).toFixed(0)}% headroom.\n`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
