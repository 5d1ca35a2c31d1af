// Every notification the gateway itself sends, in one place: the objects send them, the console and
// the CLI act on them. ACP reserves names starting with `_` for extensions; a client that does not
// know one ignores it. `_acp_gateway/*` belongs to the gateway: agents may not send it
// (protocol/gateway-namespace.ts), so a client can trust what arrives under it.

export const GATEWAY_NOTIFICATIONS = {
  /** A permission request was resolved: by whom, with which outcome. Sent beside `$/cancel_request`. */
  permissionResolved: "_acp_gateway/permission_resolved",
  /** A person's allow_always / reject_always became a tenant rule: its description, so people see the scope. */
  ruleCreated: "_acp_gateway/rule_created",
  /** A person's allow_always / reject_always was applied once and NOT remembered: why. */
  ruleNotCreated: "_acp_gateway/rule_not_created",
  /** A first approval of a request that needs two (four eyes) was recorded: by whom; the request waits for a second person. */
  approvalRecorded: "_acp_gateway/approval_recorded",
  /** A request that needs four eyes cannot be approved by anyone attached now: why, and who it waits for. */
  fourEyesUnsatisfiable: "_acp_gateway/four_eyes_unsatisfiable",
  /** The tenant's remembered decisions could not be consulted: people are asked. */
  rulesUnavailable: "_acp_gateway/rules_unavailable",
  /** The agent changed a waiting request's operation: its copies were withdrawn, it is asked again (decision 0040): what changed. */
  operationChanged: "_acp_gateway/operation_changed",
  /** The gateway ended a turn (deadline, agent gone): why. */
  turnEnded: "_acp_gateway/turn_ended",
  /** Another client deleted the session (session/delete): this client was detached from it. */
  sessionDeleted: "_acp_gateway/session_deleted",
  /** The replay just sent folded older tool-call updates into their current state. */
  historyCompacted: "_acp_gateway/history_compacted",
  /**
   * The gateway answered an agent's permission request by itself, nobody asked (outside a turn, after
   * a cancel): the operation, why, and what the agent got (protocol/answered-by-gateway.ts).
   */
  answeredByGateway: "_acp_gateway/answered_by_gateway",
  /**
   * The agent reported a tool call finished that it never asked about (its own allowlist, a governed
   * mode): what it may have changed is noted as unseen (decision 0046), and clients are told.
   */
  ranUnasked: "_acp_gateway/ran_unasked",
  /**
   * A request people are asked may read what the agent changed unseen (decision 0046): which request,
   * and the changes (each with its diff, under a list id); a person's allow of it marks seen those its
   * answer names against that list (decision 0064).
   */
  unseenChanges: "_acp_gateway/unseen_changes",
  /**
   * The session stopped taking prompts: the agent ran a tool call unasked and the tenant refuses agents
   * that decide approvals themselves (settings.unaskedRuns "stop", decision 0056): what ran, why, how to resume.
   */
  sessionHeld: "_acp_gateway/session_held",
  /** A person lifted a session's hold (DELETE /v1/sessions/{id}/hold): who; it takes prompts again. */
  sessionResumed: "_acp_gateway/session_resumed",
  /** A governed mode change waits for a second person (settings.modes.fourEyes, decision 0061): what, by whom, until when, how to decide. */
  modeChangeWaiting: "_acp_gateway/mode_change_waiting",
  /** A held mode change was decided: approved (relayed to the agent), refused, or expired; by whom. */
  modeChangeDecided: "_acp_gateway/mode_change_decided",
  /** The agent reports a governed mode (it may ask fewer questions): from, to (decision 0061). In the session's log. */
  agentModeChanged: "_acp_gateway/agent_mode_changed",
  /** The gateway refused something of the agent's by a limit: which, and the value. */
  limitReached: "_acp_gateway/limit_reached",
} as const;

/** The notice `acp-gateway agent` sends the gateway for each session whose output it dropped while disconnected. */
export const AGENT_BRIDGE_NOTIFICATIONS = {
  outputDropped: "_acp_gateway_agent/output_dropped",
} as const;
