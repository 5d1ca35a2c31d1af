// acp-gateway audit verify: an audit export's hash chain checked line by line (protocol/audit-chain.ts),
// streamed, so an export of any size is read once and never held whole.

import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { ChainVerifier, type VerifyResult } from "../protocol/audit-chain.ts";
import type { AuditVerifyOptions } from "./args.ts";

/** Verifies the lines of `input` (a trailing newline ends the last line; it starts none). */
async function verifyStream(input: Readable, options: Pick<AuditVerifyOptions, "after" | "end">): Promise<VerifyResult> {
  const verifier = new ChainVerifier(options.after, options.end);
  const lines = createInterface({ input, crlfDelay: Infinity });
  for await (const line of lines) verifier.push(line);
  return verifier.finish();
}

/** Runs the command: 0 the chain holds, 1 it does not, 2 the input cannot be read. */
export async function runAuditVerify(
  options: AuditVerifyOptions,
  io: { stdin: Readable; stdout: Writable; stderr: Writable } = process,
): Promise<number> {
  const input = options.file === "-" ? io.stdin : createReadStream(options.file);
  let result: VerifyResult;
  try {
    result = await verifyStream(input, options);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    io.stderr.write(`acp-gateway: cannot read ${options.file === "-" ? "stdin" : options.file}: ${reason}\n`);
    return 2;
  }
  if (!result.ok) {
    io.stderr.write(
      `${options.file === "-" ? "stdin" : options.file}:${result.fault.line}: ${result.fault.kind}: ${result.fault.message}\n`,
    );
    return 1;
  }
  io.stdout.write(
    `ok: ${result.links} link${result.links === 1 ? "" : "s"}${result.tenantId !== undefined ? ` of tenant ${result.tenantId}` : ""}; last ${result.last.seq}:${result.last.hash}\n`,
  );
  return 0;
}
