// The lint gate (npm run lint): typescript-eslint's recommended rules, plus the ones that catch
// what weaker codebases ship — promises nobody awaits or catches, `any`, unused code.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

// no-restricted-syntax takes one list per file: a later block's list replaces an earlier one's, so each
// block below names every selector that applies to its files.

/** Durable Objects are reached through durable-objects/objects.ts, where names are built and stubs typed. */
const reachObjects = {
  selector: "MemberExpression[property.name=/^(idFromName|getByName|idFromString|newUniqueId)$/]",
  message:
    "Reach a Durable Object through durable-objects/objects.ts (objects.session(env, …) etc.): names are built and stubs typed there.",
};

/** The session's turn changes in protocol/session-machine.ts only (session-table.ts writes it through to the store). */
const turnInOneModule = {
  selector: "AssignmentExpression[left.type='MemberExpression'][left.property.name='turn'][left.object.type!='ThisExpression']",
  message: "The session's turn changes only in protocol/session-machine.ts (SessionMachine): add a method there.",
};

/** The session's tables are made by its versioned layout only (durable-objects/session/store-migrations.ts). */
const tablesInTheLayout = {
  selector: ":matches(Literal[value=/CREATE (TABLE|INDEX)/i], TemplateElement[value.raw=/CREATE (TABLE|INDEX)/i])",
  message:
    "A session's table is part of its versioned layout: add it in durable-objects/session/store-migrations.ts (the layout and a migration).",
};

/** A WebSocket close code (1000–4999) written as a number where a close code goes. */
const CLOSE_LITERAL = "Literal[value>=1000][value<=4999]";
/**
 * Codes are named in core/ only: a close code given to anything called *close* or *Closed*, set as a
 * `code`, or compared with a `code`; a JSON-RPC error code (-32xxx) anywhere.
 */
const literalCodes = [
  {
    selector: `:matches(CallExpression[callee.name=/close/i], CallExpression[callee.property.name=/close/i]) > ${CLOSE_LITERAL}`,
    message: "Name the close code from core/close-codes.ts (CLOSE.normal, …); add it there if it is new.",
  },
  {
    selector: `Property[key.name=/^(code|closeCode)$/] > ${CLOSE_LITERAL}.value`,
    message: "Name the close code from core/close-codes.ts (CLOSE.normal, …); add it there if it is new.",
  },
  {
    selector: `BinaryExpression[operator=/^[!=]==?$/]:matches([left.name=/code$/i], [right.name=/code$/i]) > ${CLOSE_LITERAL}`,
    message: "Name the close code from core/close-codes.ts (CLOSE.normal, …); add it there if it is new.",
  },
  {
    selector: "UnaryExpression[operator='-'] > Literal[value>=32000][value<=32999]",
    message: "Name the JSON-RPC error code from core/rpc-errors.ts (ErrorCode.invalidParams, …); add it there if it is new.",
  },
];

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      "**/.wrangler/",
      "web/dist/",
      "bench/results/",
      "db/migrations/",
      "**/*.gen.ts",
      "web/**/*.js",
      "test-results/",
      "test/workerd/grouped/",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: {
        project: ["./tsconfig.json", "./tsconfig.node.json", "./tsconfig.tools.json", "./web/tsconfig.json"],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: false }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
      "no-console": ["error", { allow: ["error", "warn"] }],
    },
  },
  {
    // Objects are named in one place (durable-objects/objects.ts), which types each stub by its contract.
    files: ["core/**"],
    rules: { "no-restricted-syntax": ["error", reachObjects] },
  },
  {
    // Codes come from core/'s registries; a test may spell the wire's own numbers (it checks them).
    files: ["cli/**", "web/src/**", "scripts/**", "demo/**", "bench/**"],
    rules: { "no-restricted-syntax": ["error", ...literalCodes] },
  },
  {
    files: ["protocol/**", "db/**", "connection/**", "durable-objects/**", "worker/**"],
    ignores: ["durable-objects/objects.ts"],
    rules: { "no-restricted-syntax": ["error", reachObjects, ...literalCodes] },
  },
  {
    files: ["durable-objects/objects.ts"],
    rules: { "no-restricted-syntax": ["error", ...literalCodes] },
  },
  {
    // The session's turn is changed in one module only (protocol/session-machine.ts, decision 0052).
    files: ["durable-objects/**", "protocol/**"],
    ignores: ["durable-objects/objects.ts", "protocol/session-machine.ts", "durable-objects/session/session-table.ts"],
    rules: { "no-restricted-syntax": ["error", reachObjects, turnInOneModule, ...literalCodes] },
  },
  {
    files: ["durable-objects/session/**"],
    ignores: ["durable-objects/session/session-table.ts", "durable-objects/session/store-migrations.ts"],
    rules: { "no-restricted-syntax": ["error", reachObjects, turnInOneModule, tablesInTheLayout, ...literalCodes] },
  },
  {
    // Command-line programs and scripts talk to people on stdout.
    files: ["cli/**", "scripts/**", "bench/**", "demo/**", "test/**"],
    rules: { "no-console": "off" },
  },
  {
    // Tests, the benchmark and the CLI bridges read peers' arbitrary JSON by property; the gateway's
    // own code (worker/, durable-objects/, protocol/, db/) may not use `any`.
    files: ["cli/**", "bench/**", "test/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  {
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
  },
);
