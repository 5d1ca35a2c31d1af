import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../worker/env";

export class SessionObject extends DurableObject<Env> {}
