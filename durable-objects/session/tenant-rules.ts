// The session's one way to its tenant's rules (the RulesObject: the session's shard for its rules,
// the tenant's root for what it remembers), and the copy of them it decides with:
// - `TenantRules` (the permission machine's `rules` port): what a pending request is asked as, the
//   call that asks it (`consultRules`), remembering a person's *_always choice, and the watch that lets
//   a new rule answer requests already waiting (the shard's pushes: no call per request).
// - `RulesCache` (rules-cache.ts): the tenant's remembered decisions, compiled in the session, so a
//   permission request that a rule answers is decided here, with no call to the RulesObject
//   (durable-objects/rules/). The decision is the same pure function the RulesObject uses
//   (protocol/rules, through rules/engine.ts).
//
// Staying correct while decisions are local (decision 0031; the logic is protocol/generation-lease.ts):
// - The rules come from the session's *shard* of the tenant's RulesObject, with a *lease*: they are
//   used only until `leaseMs` (half a second) after the call that fetched or last confirmed them was
//   *sent*; then a cheap check (`check`, the generation) confirms them before the next use, and past
//   half the lease they are confirmed in the background so requests rarely wait. A change through the
//   API answers only once every lease on older rules has run out or been dropped, so a revoked rule
//   stops before DELETE returns, with no call to this session. Empty rules are leased the same way,
//   so a tenant's first rule reaches every session as soon as the API answers.
// - A generation announced to the session (`changed`) drops older rules at once, and rules older than
//   one announced are never installed (an answer that travelled while the change was announced).
// - Rules unknown (a shard, the root or D1 failing): `decide` throws and the session asks people.
// - A session with requests waiting on people asks its shard to tell it of changes (`subscribe`): a new
//   rule may answer them (it re-decides them, session-object.ts `rulesChanged`). No call per request.
// Kept in memory only: an evicted session starts empty and fetches a snapshot on its next request.

import { shardOf } from "../../protocol/generation-lease";
import {
  type DecideRequest,
  type DecideResult,
  RULES_SHARDS,
  type RememberRequest,
  type RuleCreated,
  type RuleNotCreated,
} from "../rules/contract";
import { log } from "../../core/log";
import type { Env } from "../../core/env";
import type { PendingRequest, SessionMeta, SessionStore } from "./store";
import { toolCallOf } from "../../protocol/pending-permission";
import type { NewUnseenChange, UnseenGateRequest, UnseenHold } from "../../protocol/unseen";
import type { ReaderReport, UnseenHolder } from "../../protocol/unseen-lease";
import { type RulesStub, objects } from "../objects";
import { sessionUnseenHolder } from "./unseen-holder";
import { RulesCache } from "./rules-cache";

export class TenantRules {
  private readonly cache = new RulesCache(
    () => this.shard(),
    () => this.store.meta?.sessionId ?? "",
  );
  private stub?: RulesStub;
  private shardStub?: RulesStub;
  /** A person's *_always answer being stored (RulesObject.remember): requests wait for it. */
  private remembering?: Promise<void>;
  /** The unseen-changes gate's session side (decision 0058): made at its first use, from the session's SQLite. */
  private holder?: UnseenHolder;

  constructor(
    private readonly env: Env,
    private readonly store: SessionStore,
    private readonly sql: SqlStorage,
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
   * (`rulesChanged`, `RulesCache.changed` in rules-cache.ts) is that news: it reaches every session that said it has requests
   * waiting, and such a session re-decides them (session-object.ts). So waiting costs one call when the
   * session starts waiting, none per request. Nothing to undo when nothing waits any more: the next
   * push that finds the session waiting on nobody takes it off the list.
   */
  watch(): void {
    if (this.store.meta) this.cache.subscribe();
  }

  /**
   * The tenant's unseen changes (decisions 0046, 0058): hold the step, or let it go (what it may write
   * noted, a reader opened). At once, with no call, for a reader while the session holds a clean lease;
   * otherwise the tenant's root decides (RulesObject root, unseen-changes.ts).
   */
  gate(request: UnseenGateRequest): UnseenHold | null | Promise<UnseenHold | null> {
    // A request is asked within a turn: one whose turn ended while the root decided was cancelled.
    const asked = this.store.turn;
    const askedIn = asked.state === "idle" ? null : asked.gwId;
    const stillAsked = () => {
      const turn = this.store.turn;
      return askedIn === null || (turn.state !== "idle" && turn.gwId === askedIn);
    };
    const gated = this.unseenHolder().gate(
      { sessionId: request.sessionId, toolCallId: request.toolCallId ?? "", reads: request.reads, note: request.note },
      stillAsked,
    );
    return gated instanceof Promise ? gated.then((answer) => answer.held) : gated;
  }

  /** The root revokes this session's clean leases up to `leaseId`: dropped; the answer is its open readers. */
  unseenRevoke(leaseId: number): ReaderReport {
    return this.unseenHolder().revoke(leaseId);
  }

  /** What the agent changed with nobody asked: unseen for the tenant. */
  note(changes: NewUnseenChange[]): Promise<void> {
    if (this.store.meta) this.unseenHolder().changedUnasked();
    return this.rules().unseenNote(changes);
  }

  /** What is unseen now, shown to people with a step that may read it. */
  unseenNow(): Promise<UnseenHold | null> {
    return this.rules().unseenNow();
  }

  /** A person allowed a request whose card showed these unseen changes. */
  seen(ids: number[]): Promise<number> {
    return this.rules().unseenSeen(ids);
  }

  /** A reader the rules let go finished (null: the session's turn ended, every one); the root is told if it knew of it. */
  readerDone(toolCallId: string | null): Promise<void> {
    if (this.store.meta) this.unseenHolder().readerDone(toolCallId);
    return Promise.resolve();
  }

  private unseenHolder(): UnseenHolder {
    this.holder ??= sessionUnseenHolder(this.sql, {
      step: (step) => this.rules().unseenStep(step),
      renew: (report) => this.rules().unseenRenew(this.sessionId(), report),
      report: (report) => {
        this.rules()
          .unseenReport(this.sessionId(), report)
          .catch((e: unknown) =>
            log("warn", "session.unseen_report_failed", "reporting open readers failed", { sessionId: this.sessionId() }, e),
          );
      },
    });
    return this.holder;
  }

  private sessionId(): string {
    return this.store.meta?.sessionId ?? "";
  }

  /** What the rules are asked: the operation frozen when the request was asked (never the row as changed since), the turn's user. */
  private decideRequest(meta: SessionMeta, pending: PendingRequest): DecideRequest {
    const toolCall = toolCallOf(pending) as DecideRequest["toolCall"];
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
