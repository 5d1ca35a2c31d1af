// What a client attaching to a session (session/load, a reconnect, a teammate opening the link) is
// replayed from the session's log, in the log's order (decision 0048). Besides the session's updates
// and the agent's extension notifications, the history carries what the live path told the clients
// attached then, so a replayed permission card says what the live one said:
//
// - each resolved permission request, at its place, as the `_acp_gateway/permission_resolved` it was
//   resolved with (who or which rule answered, the option, the person's reason: the log kept the very
//   text that was sent), marked `replayed: true`, with the request's `toolCall` and `options` (a client
//   that attaches later never saw the request itself);
// - the gateway's notices that are history (answered by the gateway, a rule created or not, a request
//   the agent changed, a first approval, rules unreachable, the turn ended by the gateway). A notice
//   about the present (four eyes unsatisfiable now, a limit) is not replayed.
//
// A request withdrawn (the agent changed or withdrew it, or it could not be delivered) is not replayed:
// live, its copies were withdrawn and what replaced it follows. Every frame here is the gateway's own
// text or the agent's request as logged; nothing is re-serialised but the resolution it wraps.

import { GATEWAY_NOTIFICATIONS } from "../core/gateway-notifications";
import { isObject } from "./jsonrpc";

/** One row of the session's log, as replay reads it (durable-objects/session/store.ts `replayable`). */
export interface LogRow {
  kind: string;
  body: string;
  /** A permission request's resolution, as it was sent to the clients attached then. */
  resolved: string | null;
}

/** The gateway's notices that tell what happened, replayed with the history. */
const HISTORY_NOTICES: readonly string[] = [
  GATEWAY_NOTIFICATIONS.answeredByGateway,
  GATEWAY_NOTIFICATIONS.ruleCreated,
  GATEWAY_NOTIFICATIONS.ruleNotCreated,
  GATEWAY_NOTIFICATIONS.operationChanged,
  GATEWAY_NOTIFICATIONS.approvalRecorded,
  GATEWAY_NOTIFICATIONS.rulesUnavailable,
  GATEWAY_NOTIFICATIONS.turnEnded,
  // What a request was shown of the agent's unseen changes, and what the agent ran unasked (decision 0046).
  GATEWAY_NOTIFICATIONS.unseenChanges,
  GATEWAY_NOTIFICATIONS.ranUnasked,
  // A session stopped after an unasked run, and who resumed it (decision 0056).
  GATEWAY_NOTIFICATIONS.sessionHeld,
  GATEWAY_NOTIFICATIONS.sessionResumed,
  // How a held mode change ended, with its card whole (decision 0064): while one waits, attach tells it instead.
  GATEWAY_NOTIFICATIONS.modeChangeDecided,
];

/** How a notice's text starts: the gateway writes every one as `JSON.stringify({ jsonrpc, method, params })` (session-info.ts). */
const noticePrefix = (method: string) => `{"jsonrpc":"2.0","method":${JSON.stringify(method)},`;
const HISTORY_PREFIXES = HISTORY_NOTICES.map(noticePrefix);
const RESOLVED_PREFIX = noticePrefix(GATEWAY_NOTIFICATIONS.permissionResolved);

/** The frames a row replays as: its body (an update, an extension), a notice that is history, a resolution; or none. */
export function* replayedFrames(rows: Iterable<LogRow>): Iterable<string> {
  for (const row of rows) {
    if (row.kind === "update" || row.kind === "ext") yield row.body;
    else if (row.kind === "notice") {
      if (HISTORY_PREFIXES.some((prefix) => row.body.startsWith(prefix))) yield row.body;
    } else if (row.kind === "permission" && row.resolved !== null) {
      const frame = replayedResolution(row.body, row.resolved);
      if (frame !== null) yield frame;
    }
  }
}

/** A resolved request's `permission_resolved`, marked replayed and carrying the request's tool call and options. */
function replayedResolution(requestBody: string, resolved: string): string | null {
  if (!resolved.startsWith(RESOLVED_PREFIX)) return null; // withdrawn, or answered outside a turn (its notice tells)
  const notice = parse(resolved);
  const request = parse(requestBody);
  if (!isObject(notice) || !isObject(notice.params)) return null;
  const asked = isObject(request) && isObject(request.params) ? request.params : {};
  const params = {
    ...notice.params,
    replayed: true,
    request: {
      ...(isObject(asked.toolCall) ? { toolCall: asked.toolCall } : {}),
      ...(Array.isArray(asked.options) ? { options: asked.options } : {}),
    },
  };
  return JSON.stringify({ jsonrpc: "2.0", method: GATEWAY_NOTIFICATIONS.permissionResolved, params });
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
