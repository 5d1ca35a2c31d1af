// The session machine's one port (protocol/session-machine.ts `SessionPort`), built from the
// SessionObject's parts: the rows are store.ts and request-rows.ts, the ways to the agent agent-channels.ts, answers and
// notices go to the clients, the turn's start and end to the permission machine, the tenant's policy
// and the session's info (and, for clients that came by attach, the PR's turn_complete), a deletion
// to session-deletion.ts.

import type { SessionPort } from "../../protocol/session-machine";
import type { TurnEnd } from "../../protocol/session-attach";
import type { TurnState } from "../../protocol/turn-state";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import type { AgentChannels } from "../../protocol/session-agent-order";
import type { AttachedClients } from "./clients";
import { send } from "./clients";
import type { SessionInfo } from "./session-info";
import type { SessionStore } from "./store";
import type { RequestRows } from "./request-rows";
import type { TenantPolicy } from "./tenant-policy";

export interface SessionPortParts {
  store: SessionStore;
  requests: RequestRows;
  channels: AgentChannels;
  clients: AttachedClients;
  info: SessionInfo;
  /** The permission machine, as the session machine uses it (a turn's end). */
  permissions: SessionPort["permissions"];
  /** The tenant's four-eyes policy, read as each turn starts. */
  policy: TenantPolicy;
  /** session/delete went ahead: session-deletion.ts. */
  deleted: SessionPort["deleted"];
  /** Sets the object's alarm to the earliest deadline, notify time, audit retry or idle time. */
  scheduleDeadline(): void;
}

export function sessionPort(parts: SessionPortParts): SessionPort {
  const { store, requests, clients, info, permissions } = parts;
  // The turn the machine just set idle, until its end is told (`promptEnded`, or the gateway's
  // `turn_ended` notice in the same step): the PR's turn_complete names who prompted it (decision 0060).
  let ended: Extract<TurnState, { connId: string }> | undefined;
  const completed = (end: TurnEnd) => {
    if (ended) info.turnCompleted(ended, end);
    ended = undefined;
  };
  return {
    table: {
      get meta() {
        return store.meta;
      },
      get turn() {
        return store.turn;
      },
      set turn(turn) {
        const before = store.turn;
        ended = turn.state === "idle" && before.state !== "idle" ? before : undefined;
        store.turn = turn;
      },
      get hold() {
        return store.hold;
      },
      nextId: () => store.nextId(),
      lastSeq: () => store.lastSeq(),
      addInflight: (row) => requests.addInflight(row),
      takeInflight: (gwId) => requests.takeInflight(gwId),
      inflightByClient: (connId, clientId) => requests.inflightByClient(connId, clientId),
    },
    channels: parts.channels,
    now: () => Date.now(),
    toConnection: (connId, text, keptForResume) => {
      if (keptForResume) return clients.toConnection(connId, text);
      const ws = clients.byConnection(connId);
      if (ws) send(ws, text);
    },
    notice: (method, params) => {
      info.notice(method, params);
      // The gateway ended the turn (it is idle now); a turn it is cancelling ends with the agent's answer.
      if (method === GATEWAY_NOTIFICATIONS.turnEnded && store.turn.state === "idle")
        completed({ by: "gateway", reason: "reason" in params && typeof params.reason === "string" ? params.reason : "ended" });
    },
    permissions,
    promptStarted: (gwId, client, params) => {
      ended = undefined;
      parts.policy.turnStarted(gwId);
      info.recordPrompt(client, params);
    },
    promptEnded: (result) => {
      store.append("turn_end", JSON.stringify({ result }));
      info.touchIndex();
      completed({ by: "agent", result });
    },
    configOptions: (options) => info.setConfigOptions(options),
    deleted: parts.deleted,
    deadlinesChanged: () => parts.scheduleDeadline(),
  };
}
