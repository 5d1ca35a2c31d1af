// The session's three ways to its agent, as protocol/session-agent-order.ts picks them: the edge link
// and the agent link (agent-socket.ts), and an RPC call to the AgentObject on a stub kept until a
// call on it fails (a stub whose object crashed stays broken). Each is one try; which to take, and
// the second try, are the machine's.

import type { AgentChannels } from "../../protocol/session-agent-order";
import type { ToAgent } from "../agent/contract";
import type { Env } from "../../core/env";
import { type AgentStub, objects } from "../objects";
import type { AgentSocket } from "./agent-socket";
import type { SessionStore } from "./store";
import type { SessionTesting } from "./session-testing";
import { sessionLog } from "./session-log";

/** Nothing goes out for a session that is gone (never initialised, or deleted): each way then says no. */
export function agentChannels(
  ctx: DurableObjectState,
  env: Env,
  store: SessionStore,
  socket: AgentSocket,
  /**
   * The object's test seam (session-testing.ts), read at each use: a test may replace the stub of each
   * RPC call (`agent`) and refuse or watch each frame sent on a link (`onLinkSend`). Both hand on the
   * real one unless a test set its hook.
   */
  testing: () => Pick<SessionTesting, "agent" | "onLinkSend">,
): AgentChannels {
  let agentStub: AgentStub | undefined;
  const onLink = (frame: ToAgent, send: () => boolean) => store.meta !== undefined && (testing().onLinkSend?.(frame, send) ?? send());
  return {
    edge: (frame, key, settle) => onLink(frame, () => socket.send(frame, key, settle, true)),
    link: (frame, key, settle) => onLink(frame, () => socket.send(frame, key, settle)),
    rpc: (frame, key, fresh, settle) => {
      const meta = store.meta;
      if (!meta) return false;
      if (fresh) agentStub = undefined;
      const cached = (agentStub ??= objects.agent(env, meta.tenantId, meta.agent));
      const ref = { tenantId: meta.tenantId, sessionId: meta.sessionId };
      ctx.waitUntil(
        (testing().agent?.(cached) ?? cached).toAgent(meta.agent, ref, frame, key).then(
          (delivered) => settle(delivered ? "delivered" : "undelivered"),
          (e: unknown) => {
            sessionLog(store).warn("session.agent_delivery_failed", "handing a frame to the agent failed; tried again", {}, e);
            if (agentStub === cached) agentStub = undefined;
            settle("threw");
          },
        ),
      );
      return true;
    },
  };
}
