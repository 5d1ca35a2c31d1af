// What a session asks the tenant's rules, and what it is told. Plain JSON, so it crosses RPC.

interface PermissionOptionJson {
  optionId: string;
  name: string;
  kind: string;
}

export interface DecideRequest {
  sessionId: string;
  agent: string;
  cwd: string;
  /** The user behind the turn (the prompting key's label), for rules scoped to a user. */
  user: string | null;
  /** The tool call as the session's table holds it after applying the request's toolCall. */
  toolCall: Record<string, string | number | boolean | null | object>;
  options: PermissionOptionJson[];
}

export interface DecideResult {
  decision: "allow" | "reject" | null;
  ruleId?: string;
  description?: string;
  optionId?: string;
}

export interface RememberRequest extends DecideRequest {
  /** The option the person chose: an allow_always or reject_always one. */
  chosen: PermissionOptionJson;
  keyId: string;
  toolCallId: string | null;
}

export interface RuleCreated {
  id: string;
  decision: "allow" | "reject";
  description: string;
}

/** Why a person's *_always answer was not remembered; the session tells its clients. */
export interface RuleNotCreated {
  reason: string;
}
