import type { D1Migration } from "cloudflare:test";
import type { Env as GatewayEnv } from "../../core/env";

declare global {
  namespace Cloudflare {
    interface Env extends GatewayEnv {
      TEST_MIGRATIONS: D1Migration[];
      FUZZ_RUNS: string;
      REPLAY_EVENTS: string;
      BURST_UPDATES: string;
    }
  }
}
