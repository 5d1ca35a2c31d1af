// wrangler.toml's production environment differs from the top level (what `npm start` and the tests
// run) only where it must: wrangler does not inherit bindings into an environment, so a binding
// added at the top and forgotten below would deploy a production Worker without it. Read with
// wrangler's own config reader, as `wrangler deploy --env production` reads it.
import { unstable_readConfig } from "wrangler";
import { describe, expect, it } from "vitest";

/** The parts of wrangler's resolved config these tests read. */
interface Config {
  [key: string]: unknown;
  name: string;
  workers_dev?: boolean;
  durable_objects: { bindings: unknown[] };
  d1_databases: Array<{ binding: string; database_name?: string; migrations_dir?: string }>;
  analytics_engine_datasets: Array<{ binding: string; dataset?: string }>;
  ratelimits: Array<{ name: string; namespace_id: string; simple: unknown }>;
}
const read = (env?: string): Config => unstable_readConfig({ config: "wrangler.toml", env }) as unknown as Config;
const dev = read();
const production = read("production");

/** Each key that may differ, and how (docs/DEPLOY.md says why). */
const MAY_DIFFER = [
  "targetEnvironment",
  "name",
  "workers_dev",
  "routes",
  "d1_databases",
  "analytics_engine_datasets",
  "ratelimits",
  "observability",
];

describe("wrangler.toml: the production environment", () => {
  it("differs from the top level only in the keys that must", () => {
    const differing = Object.keys(dev).filter(
      (k) => JSON.stringify(dev[k as keyof typeof dev]) !== JSON.stringify(production[k as keyof typeof dev]),
    );
    expect(differing.length).toBeGreaterThan(0); // the environment was read at all
    expect(differing.filter((k) => !MAY_DIFFER.includes(k))).toEqual([]);
  });

  it("declares every binding the top level has, under the same names and classes", () => {
    expect(production.durable_objects.bindings).toEqual(dev.durable_objects.bindings);
    expect(production.d1_databases.map((d) => [d.binding, d.migrations_dir])).toEqual(
      dev.d1_databases.map((d) => [d.binding, d.migrations_dir]),
    );
    expect(production.analytics_engine_datasets.map((d) => d.binding)).toEqual(dev.analytics_engine_datasets.map((d) => d.binding));
    expect(production.ratelimits.map((r) => [r.name, r.simple])).toEqual(dev.ratelimits.map((r) => [r.name, r.simple]));
    expect(production.assets).toEqual(dev.assets);
    expect(production.migrations).toEqual(dev.migrations);
  });

  it("keeps its data apart from dev's: its own Worker, database, dataset and rate-limit namespace", () => {
    expect(production.name).not.toBe(dev.name);
    expect(production.d1_databases[0]?.database_name).not.toBe(dev.d1_databases[0]?.database_name);
    expect(production.analytics_engine_datasets[0]?.dataset).not.toBe(dev.analytics_engine_datasets[0]?.dataset);
    expect(production.ratelimits[0]?.namespace_id).not.toBe(dev.ratelimits[0]?.namespace_id);
    expect(production.workers_dev).toBe(false);
  });

  it("logs in full and traces, in both", () => {
    for (const config of [dev, production]) {
      expect(config.observability).toMatchObject({ enabled: true, logs: { enabled: true }, traces: { enabled: true } });
    }
  });
});
