// The tenant's webhook POSTs per minute, asked of its TenantLimitsObject (protocol/tenant-limits.ts
// `admitWebhooks`, decision 0061) before a session sends a batch of waiting requests to the targets.
// The object unreachable: every request is sent (each to at most `targetsPerRequest` targets, so one
// session's batch stays bounded); a limit slows notifications, it must not lose them.

import type { Env } from "../../core/env";
import { objects } from "../objects";
import { sessionLog } from "./session-log";
import type { SessionStore } from "./store";

export async function paceWebhooks(
  env: Env,
  store: SessionStore,
  tenantId: string,
  posts: number[],
  perMinute: number,
): Promise<{ admitted: number; retryAt: number }> {
  try {
    return await objects.tenantLimits(env, tenantId).takeWebhookPosts(posts, perMinute);
  } catch (error) {
    sessionLog(store).warn("session.webhook_pacing_unavailable", "the tenant's webhook pace could not be asked; sending", {}, error);
    return { admitted: posts.length, retryAt: Date.now() };
  }
}
