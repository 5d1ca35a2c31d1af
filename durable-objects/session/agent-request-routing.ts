// Where an agent's request other than a permission request may go: fs/*, terminal/*, elicitation/*
// and extensions act on a person's machine or ask a person something, so they go only to the client
// whose prompt is running (the turn's connection), and only if that client said in initialize that it
// can serve them. Watching clients never receive them; nothing falls back to "any attached client".

import { RpcError, isObject } from "../../protocol/jsonrpc";
import { CLIENT_METHODS, isExtension } from "../../protocol/methods";
import type { ClientAttachment } from "../../protocol/session-wire";
import type { TurnState } from "./store";

/** The client that may serve the request, or the error the agent gets at once. */
export type AgentRequestTarget = { ok: true; connId: string } | { ok: false; error: RpcError };

export function agentRequestTarget(
  turn: TurnState,
  sessionId: string,
  method: string,
  params: unknown,
  turnClient: ClientAttachment | undefined,
): AgentRequestTarget {
  const refuse = (why: string, reason: string) =>
    ({
      ok: false,
      error: new RpcError(
        -32601,
        `${method} was not delivered: ${why}. The gateway sends an agent's fs, terminal, elicitation and extension requests only to the client whose prompt is running, and only if it advertised the capability.`,
        { method, sessionId, reason },
      ),
    }) as const;
  if (turn.state === "idle") return refuse(`no turn is running in session ${sessionId}`, "no_turn");
  if (!turnClient || turnClient.connId !== turn.connId) {
    return refuse("the client whose prompt is running is no longer attached", "prompting_client_gone");
  }
  const needed = capabilityNeeded(method, params);
  if (needed !== null && !hasCapability(turnClient.caps, needed)) {
    return refuse(`the client whose prompt is running did not advertise clientCapabilities.${needed} in initialize`, "capability_missing");
  }
  if (needed === null && !isExtension(method)) {
    return refuse(`the gateway does not route ${method} to clients`, "unknown_method");
  }
  return { ok: true, connId: turnClient.connId };
}

type Capability =
  "fs.readTextFile" | "fs.writeTextFile" | "terminal" | "elicitation.form" | "elicitation.url" | "elicitation.(unknown mode)";

/** The capability a method needs; null for extensions (the prompting client alone gets them) and unknown methods. */
function capabilityNeeded(method: string, params: unknown): Capability | null {
  if (method === CLIENT_METHODS.fsReadTextFile) return "fs.readTextFile";
  if (method === CLIENT_METHODS.fsWriteTextFile) return "fs.writeTextFile";
  if (method.startsWith("terminal/")) return "terminal";
  if (method.startsWith("elicitation/")) {
    // A mode the gateway does not know cannot have been advertised in a way it understands: refused.
    const mode = isObject(params) ? params.mode : undefined;
    return mode === "form" ? "elicitation.form" : mode === "url" ? "elicitation.url" : "elicitation.(unknown mode)";
  }
  return null;
}

function hasCapability(caps: ClientAttachment["caps"], needed: Capability): boolean {
  switch (needed) {
    case "fs.readTextFile":
      return caps.readTextFile;
    case "fs.writeTextFile":
      return caps.writeTextFile;
    case "terminal":
      return caps.terminal;
    case "elicitation.form":
      return caps.elicitationForm === true;
    case "elicitation.url":
      return caps.elicitationUrl === true;
    case "elicitation.(unknown mode)":
      return false;
  }
}
