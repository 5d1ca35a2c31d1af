// The lint gate's promise in docs/ARCHITECTURE.md: a close code or a JSON-RPC error code is named from
// core/'s registries; one written as a number anywhere else fails `npm run lint`. Linted with the
// project's own eslint.config.js (type-aware rules off: they need no types to show this, and the
// program they would build takes seconds), at made-up paths in each folder.

import { ESLint } from "eslint";
import tseslint from "typescript-eslint";
import { describe, expect, it } from "vitest";

const eslint = new ESLint({ cwd: new URL("../..", import.meta.url).pathname, overrideConfig: tseslint.configs.disableTypeChecked });

/** The messages of the literal-code rules for `code` as if it were the file at `path`. */
async function literalCodeErrors(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path });
  return (result?.messages ?? []).filter((m) => /core\/(close-codes|rpc-errors)\.ts/.test(m.message)).map((m) => m.message);
}

describe("a literal close or JSON-RPC error code is a lint error outside core/", () => {
  it.each([
    ["a close code given to close()", "declare const ws: WebSocket;\nws.close(1011, 'x');\n"],
    [
      "a close code given to a function named *Closed",
      "declare function agentClosed(code: number, why: string): void;\nagentClosed(1000, 'x');\n",
    ],
    ["a close code set as `code`", "export const closing = { code: 4401, reason: 'x' };\n"],
    ["a close code compared with a `code`", "export const normal = (code: number) => code === 1000;\n"],
    ["a JSON-RPC error code", "export const error = { code: -32603, message: 'x' };\n"],
  ])("fires on %s in worker/, durable-objects/, protocol/ and web/src/", async (_what, code) => {
    for (const path of [
      "worker/lint-example.ts",
      "durable-objects/session/lint-example.ts",
      "protocol/lint-example.ts",
      "web/src/lint-example.ts",
    ]) {
      expect(await literalCodeErrors(path, code), path).toHaveLength(1);
    }
  });

  it("names the registry's code instead, and leaves numbers that are no code alone", async () => {
    const code = [
      "import { CLOSE } from '../core/close-codes';",
      "declare const ws: WebSocket;",
      "ws.close(CLOSE.normal, 'x');",
      "setTimeout(() => ws.close(), 1000);",
      "export const limits = { rulesPerTenant: 1000, code: 200 };",
      "",
    ].join("\n");
    expect(await literalCodeErrors("worker/lint-example.ts", code)).toEqual([]);
  });

  it("lets core/ define the codes and tests spell the wire's numbers", async () => {
    const code = "declare const ws: WebSocket;\nws.close(1011, 'x');\nexport const error = { code: -32603 };\n";
    expect(await literalCodeErrors("core/lint-example.ts", code)).toEqual([]);
    expect(await literalCodeErrors("test/workerd/lint-example.test.ts", code)).toEqual([]);
  });
});
