// The SessionObject's parts, built once per instance from its storage and environment. The session
// machine comes first: the permission machine's answers and the routed requests' answers go straight
// into its order. The two machines call each other through their ports, so the session machine reaches
// the permission machine (and a deletion) through `later`, on a turn's end or a session deleted only.

import { SessionMachine } from "../../protocol/session-machine";
import type { LiveStatePublisher } from "../../protocol/live-state";
import { auditBudgetSpent } from "../../protocol/tenant-limits";
import type { Env } from "../../core/env";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { objects } from "../objects";
import { agentChannels } from "./agent-channels";
import { AgentLink } from "./agent-link";
import { AgentModes } from "./agent-modes";
import { AgentRequests } from "./agent-request-routing";
import { AgentSocket } from "./agent-socket";
import { AuditOutbox } from "./audit-outbox";
import { AttachedClients } from "./clients";
import { ClientMessages } from "./client-messages";
import { liveIndex } from "./live-index";
import { ModeApprovals } from "./mode-approvals";
import { Notifier } from "./notify";
import { type PermissionLifecycle, permissionLifecycle } from "./permission-lifecycle";
import { SessionAttach } from "./session-attach";
import { SessionDeadlines } from "./session-deadlines";
import { SessionDeletion } from "./session-deletion";
import { SessionInfo } from "./session-info";
import { sessionPort } from "./session-port";
import type { SessionTesting } from "./session-testing";
import { SessionStore } from "./store";
import { RequestRows } from "./request-rows";
import { TenantPolicy } from "./tenant-policy";
import { TenantRules } from "./tenant-rules";
import { TurnWatch } from "./turn-watch";
import { UnaskedRuns } from "./unasked-runs";
import { SessionUnindex } from "./unindex";

export interface SessionParts {
  store: SessionStore;
  requests: RequestRows;
  clients: AttachedClients;
  notifier: Notifier;
  rules: TenantRules;
  permissions: PermissionLifecycle;
  machine: SessionMachine;
  agentRequests: AgentRequests;
  agent: AgentLink;
  agentSocket: AgentSocket;
  attach: SessionAttach;
  fromClients: ClientMessages;
  deadlines: SessionDeadlines;
  audits: AuditOutbox;
  turnWatch: TurnWatch;
  live: LiveStatePublisher;
  unasked: UnaskedRuns;
  modes: ModeApprovals;
}

/** `testing`: the instance's test seam (session-testing.ts), read at each use: a test sets its hooks after the object is built. */
export function sessionParts(ctx: DurableObjectState, env: Env, testing: () => SessionTesting): SessionParts {
  const store = new SessionStore(ctx.storage);
  const requests = new RequestRows(ctx.storage.sql);
  const deadlines = new SessionDeadlines(ctx);
  const scheduleDeadline = () => deadlines.schedule();
  const d1 = () => testing().d1 ?? env.DB;
  const held: { modes?: ModeApprovals } = {};
  const live = liveIndex(ctx, d1, store, scheduleDeadline, () => held.modes?.count() ?? 0);
  const clients = new AttachedClients(ctx);
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
  const rules = new TenantRules(env, store);
  const policy = new TenantPolicy(env.DB, store);
  const channels = agentChannels(ctx, env, store, agentSocket, testing);
  // The session machine comes first, so every frame for the agent goes straight into its order
  // (protocol/session-agent-order.ts); what it asks of the permission machine and of a deletion (a turn's
  // end, a session deleted: never on the way to the agent) goes through `later`, set once they exist.
  const later: { permissions?: PermissionLifecycle; deletion?: SessionDeletion } = {};
  const port = sessionPort({
    store,
    requests,
    channels,
    clients,
    info,
    policy,
    scheduleDeadline,
    permissions: { cancelAll: (by) => later.permissions?.cancelAll(by), turnEnded: () => later.permissions?.turnEnded() },
    deleted: (inflight, result) => later.deletion?.deleted(inflight, result),
  });
  // Each frame's key for the AgentObject's once-only hand-off starts where no earlier instance's could still be in use.
  const machine = new SessionMachine(port, Date.now() * 1000);
  const toAgent = machine.toAgent;
  const unasked = new UnaskedRuns({
    db: d1,
    store,
    info,
    waitUntil: (promise) => ctx.waitUntil(promise),
    known: () => (store.turn.state === "idle" ? undefined : policy.unaskedRuns),
    cancelTurn: (reason, message) => machine.stopTurn(reason, message),
  });
  const permissions = permissionLifecycle({
    unasked,
    policy,
    ctx,
    store,
    clients,
    notifier,
    turnWatch,
    audits,
    rules,
    info,
    toAgent,
    scheduleDeadline,
    metrics: env.METRICS,
  });
  const deletion = new SessionDeletion(ctx, store, clients, permissions, notifier, unindex, scheduleDeadline);
  later.permissions = permissions;
  later.deletion = deletion;
  const agentRequests = new AgentRequests(store, requests, clients, toAgent);
  const modes = new ModeApprovals(ctx.storage.sql, d1, store, clients, machine, () => {
    live.changed();
    scheduleDeadline();
  });
  held.modes = modes;
  const attach = new SessionAttach(ctx, store, requests, clients, permissions, agentSocket, modes);
  const fromClients = new ClientMessages(store, machine, permissions, agentRequests, modes);
  const agentModes = new AgentModes({
    db: d1,
    store,
    info,
    waitUntil: (promise) => ctx.waitUntil(promise),
    hold: (mode) => unasked.holdForMode(mode),
  });
  const agent = new AgentLink({
    sql: ctx.storage.sql,
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
    fromClients,
    deadlines,
    audits,
    turnWatch,
    live,
    unasked,
    modes,
  };
}
