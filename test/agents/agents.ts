// The real agents `npm run test:agents` drives, one profile each: how to start it (through
// `acp-gateway agent`), how to point it at its scripted model in a throwaway home, what its shell and
// write tools are called, and where it keeps permissions it remembers by itself.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { anthropicModel } from "./models/anthropic.ts";
import type { ToolNames } from "./models/script.ts";
import type { Handler } from "./models/server.ts";

const MODULES = join(fileURLToPath(new URL(".", import.meta.url)), "node_modules");

export interface AgentProfile {
  id: string;
  /** The npm package and the version pinned in test/agents/package.json. */
  pkg: string;
  tools: ToolNames;
  model(tools: ToolNames, project: string): Handler;
  /** Writes the agent's config into `home` and returns its command line and environment. */
  prepare(home: string, modelUrl: string): { argv: string[]; env: Record<string, string> };
  /** Files in which the agent itself remembers permissions (an "always" it stored on its own). */
  remembered(home: string, project: string): string[];
}

/** Nothing from the developer's own setup: a home of its own, no telemetry, no update checks. */
function isolated(home: string): Record<string, string> {
  return {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local", "share"),
    XDG_STATE_HOME: join(home, ".local", "state"),
    XDG_CACHE_HOME: join(home, ".cache"),
    NO_UPDATE_NOTIFIER: "1",
    DO_NOT_TRACK: "1",
  };
}

const claude: AgentProfile = {
  id: "claude",
  pkg: "@agentclientprotocol/claude-agent-acp@0.101.0",
  tools: {
    shell: (command) => ({ name: "Bash", input: { command, description: "Run it" } }),
    write: (path, content) => ({ name: "Write", input: { file_path: path, content } }),
  },
  model: anthropicModel,
  prepare(home, modelUrl) {
    const config = join(home, ".claude");
    mkdirSync(config, { recursive: true });
    // "Manual" mode: Claude Code's default (auto) lets its own classifier decide instead of asking.
    writeFileSync(join(config, "settings.json"), JSON.stringify({ permissions: { defaultMode: "default" } }));
    return {
      argv: [process.execPath, join(MODULES, "@agentclientprotocol", "claude-agent-acp", "dist", "index.js")],
      env: {
        ...isolated(home),
        CLAUDE_CONFIG_DIR: config,
        ANTHROPIC_BASE_URL: modelUrl,
        ANTHROPIC_API_KEY: "sk-ant-scripted",
        DISABLE_TELEMETRY: "1",
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        // Set in some containers: it offers "bypass permissions", which Claude Code then refuses as root.
        IS_SANDBOX: "",
      },
    };
  },
  remembered: (home, project) => [
    join(home, ".claude", "settings.json"),
    join(home, ".claude", "settings.local.json"),
    join(project, ".claude", "settings.json"),
    join(project, ".claude", "settings.local.json"),
  ],
};

export const AGENTS: AgentProfile[] = [claude];
