// The lint gate (npm run lint): typescript-eslint's recommended rules, plus the ones that catch
// what weaker codebases ship — promises nobody awaits or catches, `any`, unused code.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

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
    files: ["core/**", "protocol/**", "db/**", "connection/**", "durable-objects/**", "worker/**"],
    ignores: ["durable-objects/objects.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: "MemberExpression[property.name=/^(idFromName|getByName|idFromString|newUniqueId)$/]",
          message:
            "Reach a Durable Object through durable-objects/objects.ts (objects.session(env, …) etc.): names are built and stubs typed there.",
        },
      ],
    },
  },
  {
    // The session's turn is changed in one module only (durable-objects/session/turn.ts, TurnControl).
    // (Repeats the rule above: a later block's no-restricted-syntax replaces an earlier one's.)
    files: ["durable-objects/**"],
    ignores: ["durable-objects/objects.ts", "durable-objects/session/turn.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: "MemberExpression[property.name=/^(idFromName|getByName|idFromString|newUniqueId)$/]",
          message:
            "Reach a Durable Object through durable-objects/objects.ts (objects.session(env, …) etc.): names are built and stubs typed there.",
        },
        {
          selector: "AssignmentExpression[left.type='MemberExpression'][left.property.name='turn'][left.object.type!='ThisExpression']",
          message: "The session's turn changes only in durable-objects/session/turn.ts (TurnControl): add a method there.",
        },
      ],
    },
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
