// A session's log lines (core/log.ts) carry its tenant, session and agent: read from the session's
// meta at each line, since a module is built before the session it serves is created or loaded.

import { type LogContext, type Logger, logger } from "../../core/log";

interface HasMeta {
  readonly meta: { tenantId: string; sessionId: string; agent: string } | undefined;
}

export function sessionLog(store: HasMeta): Logger {
  const bound = (): Logger => {
    const meta = store.meta;
    return logger(meta ? { tenantId: meta.tenantId, sessionId: meta.sessionId, agent: meta.agent } : {});
  };
  return {
    info: (event, msg, context) => bound().info(event, msg, context),
    warn: (event, msg, context, error) => bound().warn(event, msg, context, error),
    error: (event, msg, context, error) => bound().error(event, msg, context, error),
    with: (context: LogContext) => bound().with(context),
  };
}
