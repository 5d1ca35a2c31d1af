// protocol/initialize-answer.ts: what a client's `initialize` is answered, the gateway being the agent.
// Load and delete are always served (the gateway keeps the history and the list), attach is offered by
// the caller's role, only served capabilities pass, and an agent that failed its initialize is an error.
import { describe, expect, it } from "vitest";
import type { Principal } from "../../core/principal";
import { ErrorCode } from "../../core/rpc-errors";
import { clientCapsOf, initializeResult } from "../../protocol/initialize-answer";
import { RpcError } from "../../protocol/jsonrpc";

function principal(role: Principal["role"]): Principal {
  const key = { tenantId: "t1", tenantSlug: "t", keyId: "k1", kind: "client", credential: { type: "key" } } as const;
  return { ...key, label: "ada", person: null, role, agent: null, settings: {}, lastUsedAt: null };
}

const agentInfo = {
  protocolVersion: 1,
  agentCapabilities: { loadSession: false, promptCapabilities: { image: true }, providers: {}, sessionCapabilities: { fork: {} } },
  agentInfo: { name: "claude", version: "1" },
  initializedAt: 0,
  epoch: 1,
};

const asker = (role: Principal["role"]) => ({ principal: principal(role), agent: "claude", connectionId: "c1", transport: undefined });

describe("clientCapsOf", () => {
  it("reads files, terminal, elicitation forms and URLs, and notices; anything not exactly true is off", () => {
    const caps = clientCapsOf({
      clientCapabilities: {
        fs: { readTextFile: true, writeTextFile: "yes" },
        terminal: true,
        elicitation: { form: {} },
        session: { notices: {} },
      },
    });
    expect(caps).toEqual({
      readTextFile: true,
      writeTextFile: false,
      terminal: true,
      elicitationForm: true,
      elicitationUrl: false,
      notices: true,
    });
    expect(clientCapsOf(null)).toMatchObject({ readTextFile: false, writeTextFile: false, terminal: false });
  });
});

describe("initializeResult", () => {
  it("serves load and delete always, drops what the gateway does not serve, and offers attach by the caller's role", () => {
    const result = initializeResult({ protocolVersion: 1 }, { connected: true, info: agentInfo }, asker("observer"));
    const capabilities = result.agentCapabilities as Record<string, Record<string, unknown>>;
    expect(capabilities.loadSession).toBe(true);
    expect(capabilities.providers).toBeUndefined();
    expect(capabilities.sessionCapabilities).toEqual({
      delete: {},
      _meta: { "acp/attach": { roles: ["observer"], historyPolicies: expect.any(Array) } },
    });
    const driver = initializeResult({}, { connected: true, info: agentInfo }, asker("member"));
    expect(
      (driver.agentCapabilities as { sessionCapabilities: { _meta: Record<string, { roles: string[] }> } }).sessionCapabilities._meta[
        "acp/attach"
      ]?.roles,
    ).toEqual(["controller", "observer"]);
    expect(result).toMatchObject({ protocolVersion: 1, authMethods: [], agentInfo: { name: "claude" } });
    expect(result._meta).toMatchObject({ acpGateway: { connectionId: "c1", agent: "claude", agentConnected: true } });
  });

  it("advertises the transport only when the client's transport offers resumable streams", () => {
    const transport = { resumable: { retentionMessages: 10, retentionSeconds: 60 } };
    expect(initializeResult({}, { connected: false, info: null }, asker("owner"))._meta).not.toHaveProperty(["acp/transport"]);
    const meta = initializeResult({}, { connected: false, info: null }, { ...asker("owner"), transport })._meta;
    expect(meta).toMatchObject({ "acp/transport": transport });
  });

  it("answers with the agent's own words, not empty capabilities, when the agent failed the gateway's initialize", () => {
    const failing = () => initializeResult({}, { connected: true, info: null, failing: "bad credentials" }, asker("owner"));
    expect(failing).toThrow(RpcError);
    expect(failing).toThrow(
      expect.objectContaining({
        code: ErrorCode.internalError,
        message: "bad credentials",
        data: { reason: "agent_failing", agent: "claude" },
      }),
    );
  });
});
