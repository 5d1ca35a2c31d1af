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
import { sessionLog } from "./session-log";

/**
 * The object's test seam (session-object.ts `SessionTesting`), applied at the two points a test may
 * steer: the stub of each RPC call to the AgentObject, and each frame sent on a link. Both hand on
 * the real one unless a test set its hook.
 */
export interface ChannelSeam {
  agent(real: AgentStub): AgentStub;
  send(frame: ToAgent, send: () => boolean): boolean;
}

/** Nothing goes out for a session that is gone (never initialised, or deleted): each way then says no. */
export function agentChannels(
  ctx: DurableObjectState,
  env: Env,
  store: SessionStore,
  socket: AgentSocket,
  seam: ChannelSeam,
): AgentChannels {
  let agentStub: AgentStub | undefined;
  const onLink = (frame: ToAgent, send: () => boolean) => store.meta !== undefined && seam.send(frame, send);
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
        seam
          .agent(cached)
          .toAgent(meta.agent, ref, frame, key)
          .then(
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
