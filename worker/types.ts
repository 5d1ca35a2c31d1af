import type { Principal } from "./auth";
import type { Env } from "./env";

/** The one environment type of the Hono app: bindings, and the variables middleware sets. */
export type AppEnv = { Bindings: Env; Variables: { principal: Principal } };
