// The SessionObject's parts, built once per instance from its storage and environment, and the one
// port between its two machines and them: the session machine's (protocol/session-machine.ts
// `SessionPort`) and the permission machine's (protocol/permission-machine.ts `PermissionPorts`), each
// member a call on the part that does it (the audit port is audit-outbox.ts's, the rules port
// rules-port.ts's). The session machine comes first: the permission machine's answers and the routed
// requests' answers go straight into its order. The two machines call each other, so the session
// machine reaches the permission machine (and a deletion) through `later`, on a turn's end or a
// session deleted only.

import { SessionMachine } from "../../protocol/session-machine";
import { LATER, PermissionMachine } from "../../protocol/permission-machine";
import { type ClientAttachment } from "../../protocol/session-wire";
import type { LiveStatePublisher } from "../../protocol/live-state";
import { auditBudgetSpent } from "../../protocol/tenant-limits";
import type { Env } from "../../core/env";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { recordMetric } from "../../core/metrics";
import { objects } from "../objects";
import { AgentLink } from "./agent-link";
import { AgentModes } from "./agent-modes";
import { AgentRequests } from "./agent-request-routing";
import { AgentSocket, agentChannels } from "./agent-socket";
import { AuditOutbox, auditPort } from "./audit-outbox";
import { AttachedClients, attachmentOf, send } from "./clients";
import { liveIndex } from "./live-index";
import { ModeApprovals } from "./mode-approvals";
import { Notifier } from "./notify";
import { SessionAttach } from "./session-attach";
import { SessionDeadlines } from "./session-deadlines";
import { SessionDeletion } from "./session-deletion";
import { SessionInfo } from "./session-info";
import { sessionLog } from "./session-log";
import { sessionTable } from "./session-table";
import type { SessionTesting } from "./session-testing";
import { SessionStore } from "./store";
import { RequestRows } from "./request-rows";
import { TenantPolicy } from "./tenant-policy";
import { TenantRules } from "./tenant-rules";
import { rulesPort } from "./rules-port";
import { TurnWatch } from "./turn-watch";
import { UnaskedRuns } from "./unasked-runs";
import { SessionUnindex } from "./unindex";

export interface SessionParts {
  store: SessionStore;
  requests: RequestRows;
  clients: AttachedClients;
  notifier: Notifier;
  rules: TenantRules;
  permissions: PermissionMachine<WebSocket>;
  machine: SessionMachine;
  agentRequests: AgentRequests;
  agent: AgentLink;
  agentSocket: AgentSocket;
  attach: SessionAttach;
  deadlines: SessionDeadlines;
  audits: AuditOutbox;
  turnWatch: TurnWatch;
  live: LiveStatePublisher;
  unasked: UnaskedRuns;
  modes: ModeApprovals;
}

/** How often each pending request was re-sent to this client after a refused answer; kept in the socket's attachment (it survives hibernation). */
type WithResends = ClientAttachment & { resends?: Record<string, number> };

/** `testing`: the instance's test seam (session-testing.ts), read at each use: a test sets its hooks after the object is built. */
export function sessionParts(ctx: DurableObjectState, env: Env, testing: () => SessionTesting): SessionParts {
  const store = new SessionStore(ctx.storage);
  const requests = new RequestRows(ctx.storage.sql);
  const deadlines = new SessionDeadlines(ctx);
  const scheduleDeadline = () => deadlines.schedule();
  const d1 = () => testing().d1 ?? env.DB;
  const held: { modes?: ModeApprovals } = {};
  const live = liveIndex(ctx, d1, store, scheduleDeadline, () => held.modes?.count() ?? 0);
  const clients = new AttachedClients(ctx, () => testing().now?.() ?? Date.now());
  const agentSocket = new AgentSocket(ctx);
  const info = new SessionInfo(ctx, env, store, clients);
  const audits = new AuditOutbox(ctx.storage.sql, env.DB, store, {
    charge: (tenantId, full, summarised, perDay) => objects.tenantLimits(env, tenantId).chargeAudit(full, summarised, perDay),
    spent: (perDay, resetsAt) =>
      info.notice(GATEWAY_NOTIFICATIONS.limitReached, { sessionId: store.meta?.sessionId, ...auditBudgetSpent(perDay, resetsAt) }),
  });
  const turnWatch = new TurnWatch(ctx.storage.sql);
  const unindex = new SessionUnindex(store, d1);
  const notifier = new Notifier(ctx, env, store, scheduleDeadline, (paced) =>
    info.notice(GATEWAY_NOTIFICATIONS.limitReached, { sessionId: store.meta?.sessionId, ...paced }),
  );
  const rules = new TenantRules(env, store, ctx.storage.sql);
  const policy = new TenantPolicy(env.DB, store);
  const channels = agentChannels(ctx, env, store, agentSocket, testing);
  // The session machine comes first, so every frame for the agent goes straight into its order
  // (protocol/session-machine.ts `AgentOrder`); what it asks of the permission machine and of a deletion (a turn's
  // end, a session deleted: never on the way to the agent) goes through `later`, set once they exist.
  const later: { permissions?: PermissionMachine<WebSocket>; deletion?: SessionDeletion } = {};
  const machine = new SessionMachine(
    {
      table: sessionTable(store, requests),
      channels,
      now: () => Date.now(),
      toConnection: (connId, text, keptForResume) => {
        if (keptForResume) return clients.toConnection(connId, text);
        const ws = clients.byConnection(connId);
        if (ws) send(ws, text);
      },
      notice: (method, params) => info.notice(method, params),
      permissions: { cancelAll: (by) => later.permissions?.cancelAll(by), turnEnded: () => later.permissions?.turnEnded() },
      promptStarted: (gwId, client, params) => {
        policy.turnStarted(gwId);
        info.recordPrompt(client, params);
      },
      // A prompt that joins the turn (decision 0067): its echo rows and prompt_received, as the first's.
      promptJoined: (client, params) => info.recordPrompt(client, params),
      promptEnded: (result) => {
        store.append("turn_end", JSON.stringify({ result }));
        info.touchIndex();
      },
      // The PR's turn_complete names who prompted the turn (decision 0060).
      turnEnded: (turn, end) => info.turnCompleted(turn, end),
      configOptions: (options) => info.setConfigOptions(options),
      deleted: (inflight, result) => later.deletion?.deleted(inflight, result),
      deadlinesChanged: scheduleDeadline,
    },
    // Each frame's key for the AgentObject's once-only hand-off starts where no earlier instance's could still be in use.
    Date.now() * 1000,
  );
  const toAgent = machine.toAgent;
  const unasked = new UnaskedRuns({
    db: d1,
    store,
    info,
    waitUntil: (promise) => ctx.waitUntil(promise),
    choice: () => policy.unaskedRunsNow(),
    cancelTurn: (reason, message) => machine.stopTurn(reason, message),
  });
  const permissions = new PermissionMachine<WebSocket>({
    table: store,
    clients: {
      all: () => clients.all(),
      attachment: attachmentOf,
      send: (ws, text, beside) => clients.sendForMachine(ws, text, beside),
      resends: (ws) => {
        const attachment = ws.deserializeAttachment() as WithResends | undefined;
        return attachment ? (attachment.resends ?? {}) : undefined;
      },
      setResends: (ws, resends) => ws.serializeAttachment({ ...(ws.deserializeAttachment() as WithResends), resends }),
    },
    toAgent,
    rules: rulesPort(ctx, store, rules),
    audit: auditPort(ctx, store, audits, scheduleDeadline),
    session: {
      now: () => Date.now(),
      notice: (method, params) => info.notice(method, params),
      ranUnasked: (params) => unasked.ran(params),
      deadlineChanged: scheduleDeadline,
      progress: () => turnWatch.touch(),
      peopleAsked: (permId) =>
        ctx.waitUntil(
          notifier
            .track(permId)
            .catch((error: unknown) =>
              sessionLog(store).error("session.notify_track_failed", "tracking a request for notification failed", {}, error),
            ),
        ),
      policy: (gwId, then) => {
        const read = policy.forTurn(gwId);
        if (!(read instanceof Promise)) return read;
        ctx.waitUntil(read.then(then));
        return LATER;
      },
      metric: (metric, detail) => {
        const meta = store.meta;
        if (meta) recordMetric(env.METRICS, { tenantId: meta.tenantId, metric, detail, agent: meta.agent });
      },
    },
  });
  later.permissions = permissions;
  const agentRequests = new AgentRequests(store, requests, clients, toAgent);
  const modes = new ModeApprovals(ctx.storage.sql, d1, store, clients, machine, () => {
    live.changed();
    scheduleDeadline();
  });
  held.modes = modes;
  const deletion = new SessionDeletion(ctx, store, clients, permissions, modes, notifier, unindex, scheduleDeadline);
  later.deletion = deletion;
  const attach = new SessionAttach(ctx, store, requests, clients, permissions, agentSocket, modes);
  const agentModes = new AgentModes({
    db: d1,
    store,
    info,
    waitUntil: (promise) => ctx.waitUntil(promise),
    hold: (mode) => unasked.holdForMode(mode),
  });
  const agent = new AgentLink({
    store,
    requests,
    clients,
    turnWatch,
    info,
    permissions,
    agentRequests,
    machine,
    agentModes,
  });
  deadlines.watch({ store, notifier, audits, unindex, turnWatch, live, clients, machine, modes });
  store.onLiveChange(() => {
    live.changed();
    scheduleDeadline(); // owed from now: the alarm is due (live-state.ts), in case this instance ends first
  });
  return {
    store,
    requests,
    clients,
    notifier,
    rules,
    permissions,
    machine,
    agentRequests,
    agent,
    agentSocket,
    attach,
    deadlines,
    audits,
    turnWatch,
    live,
    unasked,
    modes,
  };
}
