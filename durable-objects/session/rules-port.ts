// The permission machine's `rules` port (protocol/permission-machine.ts) over the tenant's rules
// (tenant-rules.ts): what takes time answers LATER and calls back, kept alive by `waitUntil`; a
// consult that fails is RULES_UNAVAILABLE (people are asked, and told so), never "no rule".

import { LATER, RULES_UNAVAILABLE, type PermissionPorts } from "../../protocol/permission-machine";
import { sessionLog } from "./session-log";
import type { SessionStore } from "./store";
import type { TenantRules } from "./tenant-rules";

export function rulesPort(ctx: DurableObjectState, store: SessionStore, rules: TenantRules): PermissionPorts<WebSocket>["rules"] {
  const failed = (event: string, message: string) => (error: unknown) => sessionLog(store).error(event, message, {}, error);
  /** A read the machine waits for: `then` with its value, or RULES_UNAVAILABLE when it failed (logged). */
  const later = <T>(
    read: Promise<T>,
    then: (value: T | typeof RULES_UNAVAILABLE) => void,
    event: string,
    message: string,
  ): typeof LATER => {
    ctx.waitUntil(
      read.then(then, (error: unknown) => {
        sessionLog(store).warn(event, message, {}, error);
        then(RULES_UNAVAILABLE);
      }),
    );
    return LATER;
  };
  return {
    consult: (pending, then) => {
      const decided = rules.consultRules(pending);
      if (!(decided instanceof Promise)) return decided;
      return later(decided, then, "session.rules_unavailable", "consulting the rules failed; asking people");
    },
    remember: (pending, made, then) => {
      const remembered = rules.remember(pending, made).then(then);
      ctx.waitUntil(remembered.catch(failed("session.remember_failed", "remembering the decision failed")));
    },
    watch: () => rules.watch(),
    gate: (request, then) => {
      // Decided at once under the session's clean lease (decision 0058), else by the tenant's root.
      const decided = rules.gate(request);
      if (!(decided instanceof Promise)) return decided;
      return later(decided, then, "session.unseen_unavailable", "consulting the unseen changes failed; asking people");
    },
    note: (changes) =>
      ctx.waitUntil(rules.note(changes).catch(failed("session.unseen_note_failed", "noting what the agent changed unasked failed"))),
    unseenNow: (then) => later(rules.unseenNow(), then, "session.unseen_unavailable", "reading the unseen changes failed; asking people"),
    seen: (ids) => ctx.waitUntil(rules.seen(ids).catch(failed("session.unseen_seen_failed", "marking unseen changes seen failed"))),
    readerDone: (toolCallId) =>
      ctx.waitUntil(rules.readerDone(toolCallId).catch(failed("session.reader_done_failed", "closing a reader failed"))),
  };
}
