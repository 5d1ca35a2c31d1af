// The session's one way to its tenant's rules (the RulesObject): what a pending request is asked as,
// the call that asks it (`consultRules`: the session's compiled rules cache, rules-cache.ts),
// remembering a person's *_always choice, and the watch that lets a new rule answer requests already waiting.

import type { RulesObject } from "../rules/rules-object";
import type { DecideRequest, DecideResult, RememberRequest, RuleCreated, RuleNotCreated } from "../rules/types";
import type { Env } from "../../worker/env";
import { RulesCache } from "./rules-cache";
import type { PendingRequest, SessionMeta, SessionStore } from "./store";

export class RulesLink {
  private readonly cache = new RulesCache(
    () => this.rules(),
    () => this.store.meta?.sessionId ?? "",
  );
  private stub?: DurableObjectStub<RulesObject>;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly store: SessionStore,
  ) {}

  /**
   * The rule that answers this request, or null when none does: at once (no promise) when the
   * session's compiled rules can decide now, otherwise once they are fetched or confirmed from the
   * RulesObject. The promise rejects when the rules could not be consulted: the caller then asks
   * people, never approves.
   */
  consultRules(pending: PendingRequest): DecideResult | null | Promise<DecideResult | null> {
    const meta = this.store.meta;
    if (!meta || this.cache.knownEmpty) return null;
    const request = this.decideRequest(meta, pending);
    return this.cache.decideNow(request) ?? this.cache.decide(request);
  }

  /** The RulesObject's push: rules older than `generation` are dropped. True while rules are held. */
  rulesChanged(generation: number): boolean {
    return this.cache.changed(generation);
  }

  remember(
    pending: PendingRequest,
    extra: Pick<RememberRequest, "user" | "chosen" | "keyId" | "toolCallId">,
  ): Promise<RuleCreated | RuleNotCreated | null> {
    const meta = this.store.meta;
    if (!meta) return Promise.resolve(null);
    return this.rules().remember({ ...this.decideRequest(meta, pending), ...extra });
  }

  /** Sessions with requests waiting on people are registered with the tenant's rules object. */
  watch(waiting: boolean): void {
    const meta = this.store.meta;
    if (!meta) return;
    const rules = this.rules();
    const call = waiting ? rules.watch(meta.sessionId) : rules.unwatch(meta.sessionId);
    this.ctx.waitUntil(Promise.resolve(call).catch((e: unknown) => console.error("session: rules watch failed", e)));
  }

  /** What the rules are asked: the tool call as the session's table holds it, the turn's user. */
  private decideRequest(meta: SessionMeta, pending: PendingRequest): DecideRequest {
    const row = pending.toolCallId ? this.store.toolCall(pending.toolCallId) : undefined;
    const toolCall = (row ?? pending.toolCall ?? {}) as DecideRequest["toolCall"];
    const turn = this.store.turn;
    return {
      sessionId: meta.sessionId,
      agent: meta.agent,
      cwd: meta.cwd,
      user: turn.state !== "idle" ? (turn.user ?? null) : (meta.createdBy ?? null),
      toolCall,
      options: pending.options.map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind })),
    };
  }

  private rules(): DurableObjectStub<RulesObject> {
    this.stub ??= this.env.RULES.get(this.env.RULES.idFromName(this.store.meta?.tenantId ?? ""));
    return this.stub;
  }
}
