// The layer gate (npm run layers, part of npm run gates): imports point one way and never in a circle.
// Bottom to top: core/ (Env, Principal, close codes, error codes, notification names; imports
// nothing) → protocol/ (pure ACP logic) → db/ (tenant data) → connection/ (the client connection
// logic the edge and the ConnectionObject share) → durable-objects/ (the authority) → worker/ (the
// edge). cli/ and web/ stand beside the gateway and may use only core/ and protocol/. Type-only
// imports count: a cycle of types is still a cycle a reader has to untangle.
const LAYERS = ["core", "protocol", "db", "connection", "durable-objects", "worker"];

/** A layer may import only the layers below it (and itself). */
const upward = LAYERS.map((layer, i) => ({
  name: `${layer}-imports-only-below`,
  comment: `${layer}/ may import only ${LAYERS.slice(0, i).join(", ") || "nothing of the project"}`,
  severity: "error",
  from: { path: `^${layer}/` },
  to: { path: `^(${[...LAYERS.slice(i + 1), "cli", "web", "scripts", "bench", "demo", "test"].join("|")})/` },
}));

export default {
  forbidden: [
    ...upward,
    {
      name: "core-imports-nothing",
      comment: "core/ is the bottom: it imports nothing of the project",
      severity: "error",
      from: { path: "^core/" },
      to: { path: "^(?!core/)[^/]+/", dependencyTypesNot: ["npm", "npm-dev", "core", "type-only"], pathNot: "^node_modules/" },
    },
    {
      name: "beside-the-gateway",
      comment: "cli/ and web/ use only core/ and protocol/ of the gateway",
      severity: "error",
      from: { path: "^(cli|web)/" },
      to: { path: "^(db|connection|durable-objects|worker)/" },
    },
    {
      name: "no-circular",
      comment: "no import cycle, of values or of types",
      severity: "error",
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|web/dist|bench/results|\\.wrangler)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    // `cloudflare:workers` and other runtime modules are the platform's, not files to follow.
    externalModuleResolutionStrategy: "node_modules",
    moduleSystems: ["es6"],
  },
};
