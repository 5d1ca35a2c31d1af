// Modes and configuration as permissions (protocol/people/modes.ts, decision 0041): which changes
// can make the agent ask less (closed world), and who may make them (acp-methods.ts
// refusedModeChange). Property tests over generated methods, params, spellings and roles.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ROLES, type Role } from "../../../core/principal";
import { ErrorCode } from "../../../core/rpc-errors";
import { modesNotice, refusedModeChange } from "../../../protocol/people/acp-methods";
import { type ModeChange, UNGOVERNED_MODES, fold, modeChangesOf } from "../../../protocol/people/modes";
import { rank } from "../../../protocol/people/roles";

const RUNS = Number(process.env.FUZZ_RUNS ?? 500);
const role = fc.constantFrom(...ROLES);
const LESS_OVERSIGHT = ["bypassPermissions", "acceptEdits", "yolo", "auto", "auto-edit", "full-access", "never", "on-failure", "dontAsk"];
const SAFE = ["default", "plan", "ask", "read-only", "untrusted"];

/** `value` spelt as agents and people spell it: any case, `_` `-` or space between its parts. */
const respelt = (value: string) =>
  fc
    .tuple(fc.array(fc.boolean(), { minLength: value.length, maxLength: value.length }), fc.constantFrom("", "_", "-", " "))
    .map(([upper, sep]) => [...value.replace(/-/g, sep)].map((ch, i) => (upper[i] ? ch.toUpperCase() : ch.toLowerCase())).join(""));

const setMode = (modeId: unknown): ModeChange => {
  const [change] = modeChangesOf("session/set_mode", { sessionId: "s", modeId });
  if (!change) throw new Error("precondition: session/set_mode is a change");
  return change;
};

describe("modes: which changes are governed", () => {
  it("switching to bypassPermissions, acceptEdits, yolo, auto, auto-edit, full-access is governed, in any spelling", () => {
    fc.assert(
      fc.property(fc.constantFrom(...LESS_OVERSIGHT).chain(respelt), (modeId) => {
        expect(setMode(modeId)).toMatchObject({ setting: "mode", value: modeId, governed: true });
      }),
      { numRuns: RUNS },
    );
  });

  it("default, plan, ask, read-only and untrusted stay open, in any spelling", () => {
    fc.assert(
      fc.property(fc.constantFrom(...SAFE).chain(respelt), (modeId) => {
        expect(setMode(modeId).governed).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it("closed world: any mode the gateway does not know is governed, and so is a modeId that is not a string", () => {
    const safe = new Set(SAFE.map(fold));
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (modeId) => {
        expect(setMode(modeId).governed).toBe(!safe.has(fold(modeId)));
      }),
      { numRuns: RUNS },
    );
    for (const odd of [undefined, null, 1, true, ["bypassPermissions"], { id: "plan" }]) expect(setMode(odd).governed).toBe(true);
    expect(modeChangesOf("session/set_mode", null)).toEqual([expect.objectContaining({ governed: true })]);
  });

  it("an approval policy of never or on-failure is governed; a model or thought level is not, whatever its value", () => {
    const config = (configId: unknown, value: unknown) => modeChangesOf("session/set_config_option", { sessionId: "s", configId, value });
    expect(config("approval_policy", "never")).toEqual([
      { method: "session/set_config_option", setting: "approval_policy", value: "never", governed: true },
    ]);
    expect(config("approval_policy", "on-failure")[0]?.governed).toBe(true);
    expect(config("approval_policy", "untrusted")[0]?.governed).toBe(false);
    expect(config("mode", "bypassPermissions")[0]?.governed).toBe(true);
    expect(config("sandbox", true)[0]?.governed).toBe(true); // a boolean value is not a mode the gateway knows
    expect(config(7, "default")[0]?.governed).toBe(true); // no option id: unreadable
    fc.assert(
      fc.property(fc.constantFrom("model", "Model", "thought_level", "reasoning-effort"), fc.jsonValue(), (configId, value) => {
        expect(config(configId, value)[0]?.governed).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it("a session/new or session/load whose _meta sets permissionMode is governed like set_mode", () => {
    const meta = (m: unknown) => modeChangesOf("session/new", { cwd: "/p", mcpServers: [], _meta: m });
    expect(meta({ claudeCode: { options: { permissionMode: "bypassPermissions" } } })).toEqual([
      {
        method: "session/new",
        setting: "_meta.claudeCode.options.permissionMode",
        value: "bypassPermissions",
        governed: true,
      },
    ]);
    expect(meta({ claudeCode: { options: { permissionMode: "plan" } } })[0]?.governed).toBe(false);
    expect(meta({ x: { allowDangerouslySkipPermissions: true } })[0]?.governed).toBe(true);
    expect(meta({ traceparent: "00-ab-cd-01" })).toEqual([]);
    expect(modeChangesOf("session/load", { sessionId: "s", _meta: { approvalPolicy: "never" } })[0]?.governed).toBe(true);
    expect(modeChangesOf("session/resume", { sessionId: "s", _meta: { sandbox_mode: "danger-full-access" } })[0]?.governed).toBe(true);
    let deep: unknown = "x";
    for (let i = 0; i < 20; i++) deep = { d: deep };
    expect(meta(deep)).toEqual([expect.objectContaining({ setting: "_meta", governed: true })]);
  });

  it("every other method changes nothing, and no params make the reading throw", () => {
    const method = fc.oneof(
      fc.constantFrom("session/prompt", "session/cancel", "session/set_model", "initialize", "_x/set_mode", "session/set_mode "),
      fc.string({ maxLength: 30 }),
    );
    fc.assert(
      fc.property(method, fc.jsonValue(), (m, params) => {
        const changes = modeChangesOf(m, params);
        const judged = ["session/set_mode", "session/set_config_option", "session/new", "session/load", "session/resume", "session/fork"];
        if (!judged.includes(m)) expect(changes).toEqual([]);
        if (m === "session/set_mode" || m === "session/set_config_option") expect(changes).toHaveLength(1);
      }),
      { numRuns: RUNS },
    );
  });
});

describe("modes: who may make a governed change", () => {
  it("a member's session/set_mode bypassPermissions is refused with -32003 naming the approver role; an approver's is not", () => {
    const refused = refusedModeChange("member", undefined, setMode("bypassPermissions"));
    expect(refused).toMatchObject({
      code: ErrorCode.notPermitted,
      message: expect.stringMatching(/member.*bypassPermissions.*ask fewer permission questions.*approver or higher/),
      data: { method: "session/set_mode", value: "bypassPermissions", role: "member", needs: "approver" },
    });
    expect(refusedModeChange("approver", undefined, setMode("bypassPermissions"))).toBeNull();
  });

  it("a governed change needs approver or higher; an ungoverned one is anyone's who drives", () => {
    fc.assert(
      fc.property(role, fc.boolean(), fc.string({ maxLength: 20 }), (r: Role, governed, value) => {
        const change: ModeChange = { method: "session/set_mode", setting: "mode", value, governed };
        const refused = refusedModeChange(r, undefined, change);
        expect(refused === null).toBe(!governed || rank(r) >= rank("approver"));
      }),
      { numRuns: RUNS },
    );
    expect(refusedModeChange(null, undefined, setMode("yolo"))?.code).toBe(ErrorCode.notPermitted);
  });

  it("a tenant's forbidLessOversight refuses every governed change to every role, the owner too", () => {
    fc.assert(
      fc.property(role, fc.constantFrom(...LESS_OVERSIGHT), (r, modeId) => {
        const refused = refusedModeChange(r, { forbidLessOversight: true }, setMode(modeId));
        expect(refused).toMatchObject({ code: ErrorCode.notPermitted, data: { forbidden: true } });
        expect(refused?.message).toMatch(/Your tenant forbids/);
        expect(refusedModeChange(r, { forbidLessOversight: true }, setMode("plan"))).toBeNull();
      }),
      { numRuns: RUNS },
    );
  });

  it("a tenant's forbid list refuses its values in any spelling, to every role", () => {
    fc.assert(
      fc.property(role, respelt("accept-edits"), (r, spelt) => {
        const refused = refusedModeChange(r, { forbid: ["acceptEdits"] }, setMode(spelt));
        expect(refused?.data).toMatchObject({ forbidden: true });
      }),
      { numRuns: RUNS },
    );
    expect(refusedModeChange("owner", { forbid: ["plan"] }, setMode("PLAN"))?.message).toMatch(/settings\.modes\.forbid/);
  });

  it("settings.modes no API would store forbid every governed change (closed world)", () => {
    const unreadable = { forbid: "yolo" } as unknown as { forbid: string[] };
    expect(refusedModeChange("owner", unreadable, setMode("acceptEdits"))?.data).toMatchObject({ forbidden: true });
    expect(refusedModeChange("owner", unreadable, setMode("default"))).toBeNull();
  });

  it("clients are told which modes are open, what a governed change needs, and whether they may make one", () => {
    expect(modesNotice("member", undefined)).toEqual({
      ungoverned: UNGOVERNED_MODES,
      governedNeeds: "approver",
      youMay: false,
      forbidLessOversight: false,
      forbid: [],
      fourEyes: false,
    });
    expect(modesNotice("approver", undefined).youMay).toBe(true);
    expect(modesNotice("approver", { fourEyes: true }).fourEyes).toBe(true);
    expect(modesNotice("owner", { forbidLessOversight: true, forbid: ["yolo"] })).toMatchObject({ youMay: false, forbid: ["yolo"] });
  });
});
