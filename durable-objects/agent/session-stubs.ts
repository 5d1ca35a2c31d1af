// The AgentObject's stubs of its SessionObjects, one kept per session: an RPC stub that threw may be
// broken for good, so the caller drops it (`drop`) and the next call makes a new one.

import type { Env } from "../../core/env";
import { type SessionStub, objects } from "../objects";
import type { AgentStore } from "./store";

export class SessionStubs {
  private readonly stubs = new Map<string, SessionStub>();

  constructor(
    private readonly env: Env,
    private readonly store: AgentStore,
    /** A test's replacement of the stub (agent-testing.ts `AgentTesting.session`), read at each call. */
    private readonly replacement: () => ((sessionId: string, real: SessionStub) => SessionStub) | undefined,
  ) {}

  of(sessionId: string): SessionStub {
    let stub = this.stubs.get(sessionId);
    if (!stub) {
      // Only an AgentObject that holds its meta (its tenant) delivers to sessions: without it there is no session to name.
      const tenantId = this.store.meta?.tenantId;
      if (tenantId === undefined) throw new Error("the agent connection has no meta: it cannot name a session");
      stub = objects.session(this.env, tenantId, sessionId);
      this.stubs.set(sessionId, stub);
    }
    const replace = this.replacement();
    return replace ? replace(sessionId, stub) : stub;
  }

  drop(sessionId: string): void {
    this.stubs.delete(sessionId);
  }
}
