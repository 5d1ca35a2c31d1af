import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../worker/env";

export class AgentObject extends DurableObject<Env> {}
