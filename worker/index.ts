import { Hono } from "hono";
import type { Env } from "./env";

export { AgentObject } from "../durable-objects/agent/agent-object";
export { SessionObject } from "../durable-objects/session/session-object";

const app = new Hono<{ Bindings: Env }>();
app.get("/health", (c) => c.json({ ok: true }));
export default app;
