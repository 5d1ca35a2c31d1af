// RulesObject: one per tenant. It holds the tenant's remembered decisions compiled in memory, so a
// session's question "does a rule answer this?" costs one object-to-object call and no D1 read.
// The REST API writes rules to D1 and tells this object, which reloads at once: a revoked rule stops
// matching before the API call returns. Sessions with requests waiting on people register here, so
// a new "always" rule resolves their matching requests at once.

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../worker/env";
import type { DecideRequest, DecideResult, RememberRequest, RuleCreated } from "./types";

export class RulesObject extends DurableObject<Env> {
  async decide(_tenantId: string, _request: DecideRequest): Promise<DecideResult> {
    return { decision: null };
  }

  async remember(_tenantId: string, _request: RememberRequest): Promise<RuleCreated | null> {
    return null;
  }

  watch(_tenantId: string, _sessionId: string): void {}

  unwatch(_tenantId: string, _sessionId: string): void {}

  async changed(_tenantId: string): Promise<void> {}
}
