#!/usr/bin/env node
// acp-gateway: connect ACP editors (`client`) and stdio ACP agents (`agent`) to a hosted gateway,
// and check an audit export offline (`audit verify`).

import { HELP, UsageError, parseArgs } from "./args.ts";
import { runAgent } from "./agent-bridge.ts";
import { runAuditVerify } from "./audit-verify.ts";
import { runClient } from "./client-bridge.ts";

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs(argv, process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`acp-gateway: ${error.message}\n\n${HELP.main}\n`);
    return 2;
  }
  if (parsed.command === "help") {
    process.stderr.write(`${HELP[parsed.topic ?? "main"]}\n`);
    return 0;
  }
  if (parsed.command === "audit-verify") return runAuditVerify(parsed);
  if (parsed.command === "client") return runClient(parsed);
  return runAgent(parsed);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`acp-gateway: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
