// The session's one way to its tenant's rules (the RulesObject: the session's shard for its rules,
// the tenant's root for what it remembers): what a pending request is asked as, the call that asks it
// (`consultRules`: the session's compiled rules cache, rules-cache.ts), remembering a person's
// *_always choice, and the watch that lets a new rule answer requests already waiting (the rules
// cache's subscription to its shard's pushes: no call per request).

import type { DecideRequest, DecideResult, RememberRequest, RuleCreated, RuleNotCreated } from "../rules/contract";
import type { Env } from "../../core/env";
import { RulesCache } from "./rules-cache";
import type { PendingRequest, SessionMeta, SessionStore } from "./store";
import { type RulesStub, objects } from "../objects";
import { RULES_SHARDS } from "../rules/contract";
import { shardOf } from "../../protocol/generation-lease";

export class RulesLink {
  private readonly cache = new RulesCache(
    () => this.shard(),
    () => this.store.meta?.sessionId ?? "",
  );
  private stub?: RulesStub;
  private shardStub?: RulesStub;
  /** A person's *_always answer being stored (RulesObject.remember): requests wait for it. */
  private remembering?: Promise<void>;

  constructor(
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
    if (!meta) return null;
    const request = this.decideRequest(meta, pending);
    // A person's always-answer is being stored: decided once it is (the change's fence has then run
    // out this session's lease, so the new rule is fetched), as a person would expect of the next request.
    if (this.remembering) return this.remembering.then(() => this.cache.decide(request));
    if (this.cache.knownEmpty) return null;
    return this.cache.decideNow(request) ?? this.cache.decide(request);
  }

  /** The shard's push: rules older than `generation` are dropped. True while requests wait on people (stay on its list). */
  rulesChanged(generation: number): boolean {
    return this.cache.changed(generation, this.store.hasAsking());
  }

  remember(
    pending: PendingRequest,
    extra: Pick<RememberRequest, "user" | "chosen" | "keyId" | "toolCallId">,
  ): Promise<RuleCreated | RuleNotCreated | null> {
    const meta = this.store.meta;
    if (!meta) return Promise.resolve(null);
    const remembered = this.rules().remember({ ...this.decideRequest(meta, pending), ...extra });
    const settled = remembered.then(
      () => undefined,
      () => undefined,
    );
    this.remembering = settled;
    void settled.then(() => {
      if (this.remembering === settled) this.remembering = undefined;
    });
    return remembered;
  }

  /**
   * Requests waiting on people must hear of a new rule that answers them. The shard's push of a change
   * (`rulesChanged`, rules-cache.ts) is that news: it reaches every session that said it has requests
   * waiting, and such a session re-decides them (session-object.ts). So waiting costs one call when the
   * session starts waiting, none per request. Nothing to undo when nothing waits any more: the next
   * push that finds the session waiting on nobody takes it off the list.
   */
  watch(): void {
    if (this.store.meta) this.cache.subscribe();
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

  /** The tenant's RulesObject (its root); asked only on behalf of a session that exists (its meta names the tenant). */
  private rules(): RulesStub {
    const tenantId = this.store.meta?.tenantId;
    if (tenantId === undefined) throw new Error("the session has no meta: there are no rules to consult");
    this.stub ??= objects.rules(this.env, tenantId);
    return this.stub;
  }

  /** The shard of the tenant's rules this session takes them from (the same one for its whole life). */
  private shard(): RulesStub {
    const meta = this.store.meta;
    if (meta === undefined) throw new Error("the session has no meta: there are no rules to consult");
    this.shardStub ??= objects.rulesShard(this.env, meta.tenantId, shardOf(meta.sessionId, RULES_SHARDS));
    return this.shardStub;
  }
}
