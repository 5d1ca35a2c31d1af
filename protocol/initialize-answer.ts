// What the gateway answers a client's `initialize`, where it is the agent: the client's capabilities
// as its sessions keep them, and the result — the agent's served capabilities with load, delete and
// attach added, the agent's own info, and the gateway's `_meta`. Pure: the connection
// (connection/gateway-answers.ts) reads the agent's status from its AgentObject and hands it in.

import type { Principal } from "../core/principal";
import { ErrorCode } from "../core/rpc-errors";
import type { AgentInfo, AgentNotice } from "./agent-relay";
import { RpcError, isObject } from "./jsonrpc";
import { PROTOCOL_VERSION } from "./methods";
import { modesNotice } from "./people/acp-methods";
import { servedCapabilities } from "./served-capabilities";
import { ATTACH_META, attachCapability } from "./session-attach";
import type { ClientAttachment } from "./session-wire";
import { TRANSPORT_META, type TransportCapability } from "./stream-cursor";
import { versionNote } from "./version-negotiation";

/** What the answer reads of the agent's status (connection/gateway-objects.ts `AgentStatus`). */
interface AgentSeen {
  connected: boolean;
  info: AgentInfo | null;
  unreachable?: string;
  failing?: string;
  notices?: AgentNotice[];
}

/** Who is asking: the connection's principal, its agent and id, and what its transport offers. */
interface Asker {
  principal: Principal;
  agent: string;
  connectionId: string;
  transport: TransportCapability | undefined;
}

/** The capabilities a client advertised in `initialize`, as the attach header carries them to each session. */
export function clientCapsOf(params: unknown): ClientAttachment["caps"] {
  const fs = isObject(params) && isObject(params.clientCapabilities) ? params.clientCapabilities : {};
  const fsCaps = isObject(fs.fs) ? fs.fs : {};
  return {
    readTextFile: fsCaps.readTextFile === true,
    writeTextFile: fsCaps.writeTextFile === true,
    terminal: fs.terminal === true,
    elicitationForm: isObject(fs.elicitation) && isObject(fs.elicitation.form),
    elicitationUrl: isObject(fs.elicitation) && isObject(fs.elicitation.url),
    notices: isObject(fs.session) && isObject(fs.session.notices),
  };
}

/** `initialize`'s result; an agent that refused the gateway's initialize is an error that says why. */
export function initializeResult(params: unknown, status: AgentSeen, asker: Asker): Record<string, unknown> {
  // An agent that refused the gateway's initialize: the client learns why, not empty capabilities.
  if (status.failing) throw new RpcError(ErrorCode.internalError, status.failing, { reason: "agent_failing", agent: asker.agent });
  const { principal, agent } = asker;
  const info = status.info;
  const served = servedCapabilities(info?.agentCapabilities);
  const note = versionNote(params);
  return {
    protocolVersion: PROTOCOL_VERSION,
    // The gateway keeps every session's history, so it can always load: it replays them itself.
    // It keeps the sessions list too, so it can always delete from it (protocol/session-delete.ts).
    // Only what the gateway serves reaches the client (protocol/served-capabilities.ts, decision 0042).
    agentCapabilities: {
      ...served,
      loadSession: true,
      sessionCapabilities: sessionCapabilities(served.sessionCapabilities, principal.role),
    },
    authMethods: [],
    agentInfo: info?.agentInfo ?? { name: agent },
    _meta: {
      acpGateway: {
        connectionId: asker.connectionId,
        agent,
        agentConnected: status.connected,
        // Which mode and configuration changes need more than driving a session (decision 0041).
        modes: modesNotice(principal.role, principal.settings.modes),
        ...(status.unreachable ? { agentUnreachable: status.unreachable } : {}),
        // What the agent said about itself, outside any session (`_auth/status_update`): its newest of each.
        ...(status.notices && status.notices.length > 0 ? { agentNotices: status.notices } : {}),
        // A client that asked a newer version is answered v1, and told so in words (decision 0060).
        ...(note ? { protocolVersion: note } : {}),
      },
      // The draft RFD's `capabilities.transport` (resumable streams), here until the RFD lands (decision 0050).
      ...(asker.transport ? { [TRANSPORT_META]: asker.transport } : {}),
    },
  };
}

/** What `initialize` says of sessions: the agent's served capabilities, delete, and attach under `_meta` until PR #533 lands (decision 0054). */
function sessionCapabilities(served: unknown, role: Principal["role"]): Record<string, unknown> {
  const agents = isObject(served) ? served : {};
  const meta = isObject(agents._meta) ? agents._meta : {};
  return { ...agents, delete: {}, _meta: { ...meta, [ATTACH_META]: attachCapability(role) } };
}
