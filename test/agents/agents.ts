// The real agents `npm run test:agents` drives, one profile each: how to start it (through
// `acp-gateway agent`), how to point it at its scripted model in a throwaway home, what its shell and
// write tools are called, and where it keeps permissions it remembers by itself.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { anthropicModel } from "./models/anthropic.ts";
import { openaiChatModel } from "./models/openai-chat.ts";
import { openaiResponsesModel } from "./models/openai-responses.ts";
import { geminiModel } from "./models/gemini.ts";
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
  /**
   * Why the gateway cannot remember this agent's commands, when the agent's own requests make it so
   * (a request without `rawInput` is confirmed by a person every time: ACP 1.9.1, decision 0040).
   */
  unrememberable?: string;
  /** A mode (ACP session/set_mode) in which the agent writes files without asking anyone, and the mode in which it asks. */
  editsUnasked?: { mode: string; askingMode: string };
  /** Its initialize advertises prompt queueing where the gateway acts on it (decision 0067): a prompt while a turn runs joins it. */
  queuesPrompts?: boolean;
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
  queuesPrompts: true,
  editsUnasked: { mode: "acceptEdits", askingMode: "default" },
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

const qwen: AgentProfile = {
  id: "qwen",
  editsUnasked: { mode: "auto-edit", askingMode: "default" },
  pkg: "@qwen-code/qwen-code@0.24.4",
  tools: {
    shell: (command) => ({ name: "run_shell_command", input: { command, description: "Run it", is_background: false } }),
    write: (path, content) => ({ name: "write_file", input: { file_path: path, content } }),
  },
  model: openaiChatModel,
  prepare(home, modelUrl) {
    const config = join(home, ".qwen");
    mkdirSync(config, { recursive: true });
    writeFileSync(
      join(config, "settings.json"),
      JSON.stringify({
        security: { auth: { selectedType: "openai" } },
        selectedAuthType: "openai",
        privacy: { usageStatisticsEnabled: false },
      }),
    );
    return {
      argv: [process.execPath, join(MODULES, "@qwen-code", "qwen-code", "cli-entry.js"), "--acp", "--approval-mode", "default"],
      env: { ...isolated(home), OPENAI_BASE_URL: `${modelUrl}/v1`, OPENAI_API_KEY: "sk-scripted", OPENAI_MODEL: "scripted" },
    };
  },
  remembered: (home, project) => [join(home, ".qwen", "settings.json"), join(project, ".qwen", "settings.json")],
};

const opencode: AgentProfile = {
  id: "opencode",
  pkg: "opencode-ai@1.18.33",
  tools: {
    shell: (command, cwd) => ({ name: "bash", input: { command, description: "Run it", workdir: cwd } }),
    write: (path, content) => ({ name: "write", input: { filePath: path, content } }),
  },
  model: openaiChatModel,
  prepare(home, modelUrl) {
    const config = join(home, ".config", "opencode");
    mkdirSync(config, { recursive: true });
    writeFileSync(
      join(config, "opencode.json"),
      JSON.stringify({
        $schema: "https://opencode.ai/config.json",
        provider: {
          scripted: {
            npm: "@ai-sdk/openai-compatible",
            name: "Scripted",
            options: { baseURL: `${modelUrl}/v1`, apiKey: "sk-scripted" },
            models: { scripted: { name: "Scripted", tool_call: true } },
          },
        },
        model: "scripted/scripted",
        small_model: "scripted/scripted",
        // Ask for every shell command and edit (opencode's own default lets most run).
        permission: { bash: "ask", edit: "ask" },
        autoupdate: false,
        share: "disabled",
      }),
    );
    return {
      argv: [join(MODULES, ".bin", "opencode"), "acp"],
      env: { ...isolated(home), OPENCODE_DISABLE_AUTOUPDATE: "1", OPENCODE_DISABLE_MODELS_FETCH: "1" },
    };
  },
  remembered: (home, project) => [
    join(home, ".config", "opencode", "opencode.json"),
    join(project, "opencode.json"),
    join(project, ".opencode", "opencode.json"),
  ],
};

/**
 * Codex (0.166, under codex-acp 2.6) takes a model's tools from its model catalog: a slug it does not
 * know gets no apply_patch, and the slugs it knows are code-mode models (tools only through code the
 * model writes) or a freeform apply_patch. The config's `model_catalog_json` replaces the catalog: the
 * scripted model is listed with direct tools, unified exec (`exec_command`) and apply_patch as a
 * function tool, which is what the script calls.
 */
function codexCatalog(): object {
  return {
    models: [
      {
        slug: "scripted",
        display_name: "Scripted",
        description: "The test's scripted model on loopback.",
        base_instructions: "You are a scripted test model.",
        // The only kind 0.166 knows: a custom tool whose input is the patch text (models/openai-responses.ts sends it so).
        apply_patch_tool_type: "freeform",
        shell_type: "unified_exec",
        tool_mode: null,
        experimental_supported_tools: [],
        web_search_tool_type: "text_and_image",
        input_modalities: ["text"],
        supports_parallel_tool_calls: false,
        support_verbosity: false,
        truncation_policy: { mode: "tokens", limit: 10000 },
        context_window: 200000,
        default_reasoning_level: "medium",
        supported_reasoning_levels: [{ effort: "medium", description: "Medium" }],
        visibility: "list",
        supported_in_api: true,
        priority: 1,
      },
    ],
  };
}

const codex: AgentProfile = {
  id: "codex",
  editsUnasked: { mode: "workspace-write", askingMode: "read-only" },
  pkg: "@agentclientprotocol/codex-acp@2.6.0",
  tools: {
    // Codex asks the person only when its model asks to leave the sandbox for a command.
    shell: (command, cwd) => ({
      name: "exec_command",
      input: { cmd: command, workdir: cwd, sandbox_permissions: "require_escalated", justification: "Run it" },
    }),
    write: (path, content) => ({
      name: "apply_patch",
      input: {
        input: `*** Begin Patch\n*** Add File: ${path}\n${content
          .split("\n")
          .map((l) => `+${l}`)
          .join("\n")}\n*** End Patch\n`,
      },
    }),
  },
  model: openaiResponsesModel,
  prepare(home, modelUrl) {
    const config = join(home, ".codex");
    mkdirSync(config, { recursive: true });
    writeFileSync(join(config, "models.json"), JSON.stringify(codexCatalog()));
    // Ask the person (read-only mode: on-request, the user as reviewer), never codex's reviewer model.
    writeFileSync(
      join(config, "config.toml"),
      [
        `model = "scripted"`,
        `model_provider = "scripted"`,
        `approvals_reviewer = "user"`,
        `model_catalog_json = "${join(config, "models.json")}"`,
        `check_for_update_on_startup = false`,
        `[analytics]`,
        `enabled = false`,
        `[model_providers.scripted]`,
        `name = "Scripted"`,
        `base_url = "${modelUrl}/v1"`,
        `env_key = "SCRIPTED_API_KEY"`,
        `wire_api = "responses"`,
        ``,
      ].join("\n"),
    );
    return {
      argv: [process.execPath, join(MODULES, "@agentclientprotocol", "codex-acp", "dist", "index.js")],
      env: {
        ...isolated(home),
        CODEX_HOME: config,
        SCRIPTED_API_KEY: "sk-scripted",
        MODEL_PROVIDER: "scripted",
        NO_BROWSER: "1",
        INITIAL_AGENT_MODE: "read-only",
      },
    };
  },
  remembered: (home) => [join(home, ".codex", "config.toml"), join(home, ".codex", "rules", "default.rules")],
};

const gemini: AgentProfile = {
  id: "gemini",
  editsUnasked: { mode: "autoEdit", askingMode: "default" },
  unrememberable:
    "gemini-cli 0.61 sends its shell requests with no rawInput (the command only in the title): no rule may judge them, so a person is asked each time",
  pkg: "@google/gemini-cli@0.61.0",
  tools: {
    shell: (command) => ({ name: "run_shell_command", input: { command, description: "Run it" } }),
    write: (path, content) => ({ name: "write_file", input: { file_path: path, content } }),
  },
  model: geminiModel,
  prepare(home, modelUrl) {
    const config = join(home, ".gemini");
    mkdirSync(config, { recursive: true });
    writeFileSync(
      join(config, "settings.json"),
      JSON.stringify({
        security: { auth: { selectedType: "gemini-api-key" }, folderTrust: { enabled: false } },
        privacy: { usageStatisticsEnabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
        telemetry: { enabled: false },
      }),
    );
    return {
      argv: [
        process.execPath,
        join(MODULES, "@google", "gemini-cli", "bundle", "gemini.js"),
        "--acp",
        "--approval-mode",
        "default",
        "--model",
        "gemini-2.5-flash",
      ],
      env: { ...isolated(home), GEMINI_API_KEY: "scripted", GOOGLE_GEMINI_BASE_URL: modelUrl, GEMINI_CLI_NO_RELAUNCH: "true" },
    };
  },
  remembered: (home, project) => [
    join(home, ".gemini", "settings.json"),
    join(project, ".gemini", "settings.json"),
    join(home, ".gemini", "policies", "auto-saved.toml"),
  ],
};

export const AGENTS: AgentProfile[] = [claude, qwen, opencode, codex, gemini];
