// ACP v1 method names, as `as const` maps, and the gateway's own extension names.
// The SDK exports the same maps (AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS), but importing a
// value from "@agentclientprotocol/sdk" bundles the whole SDK into the Worker (142 KB measured with
// esbuild: the package declares no sideEffects, so nothing is shaken out). So the names stay here and
// the compiler proves each one is the SDK's (`satisfies` against its types, a type-only import).

import type {
  AGENT_METHODS as SDK_AGENT_METHODS,
  CLIENT_METHODS as SDK_CLIENT_METHODS,
  PROTOCOL_METHODS as SDK_PROTOCOL_METHODS,
  PROTOCOL_VERSION as SDK_PROTOCOL_VERSION,
} from "@agentclientprotocol/sdk";

type ValuesOf<T> = T[keyof T];

export const AGENT_METHODS = {
  initialize: "initialize",
  authenticate: "authenticate",
  sessionNew: "session/new",
  sessionLoad: "session/load",
  sessionResume: "session/resume",
  sessionList: "session/list",
  sessionClose: "session/close",
  sessionDelete: "session/delete",
  logout: "logout",
  sessionSetMode: "session/set_mode",
  sessionSetConfigOption: "session/set_config_option",
  sessionPrompt: "session/prompt",
  sessionCancel: "session/cancel",
} as const satisfies Record<string, ValuesOf<typeof SDK_AGENT_METHODS>>;

export const CLIENT_METHODS = {
  sessionUpdate: "session/update",
  sessionRequestPermission: "session/request_permission",
  fsReadTextFile: "fs/read_text_file",
  fsWriteTextFile: "fs/write_text_file",
  terminalCreate: "terminal/create",
  terminalOutput: "terminal/output",
  terminalWaitForExit: "terminal/wait_for_exit",
  terminalKill: "terminal/kill",
  terminalRelease: "terminal/release",
} as const satisfies Record<string, ValuesOf<typeof SDK_CLIENT_METHODS>>;

export const CANCEL_REQUEST: (typeof SDK_PROTOCOL_METHODS)["cancel_request"] = "$/cancel_request";

export const PROTOCOL_VERSION: typeof SDK_PROTOCOL_VERSION = 1;

/** Names starting with `_` are extensions (ACP reserves them; the gateway relays them). */
export function isExtension(method: string): boolean {
  return method.startsWith("_");
}
