import type { Env } from "../core/env";
import type { Principal } from "../core/principal";

/** The one environment type of the Hono app: bindings, and the variables middleware sets. */
export type AppEnv = { Bindings: Env; Variables: { principal: Principal; traceId: string } };
