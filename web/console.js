// The web console: a browser ACP client of the gateway. It lists the team's sessions, attaches to one
// with session/load (history, then pending permission requests, then live), shows tool calls from
// their kind, command and paths (the title is the agent's own words), and answers permission requests.
// Browsers cannot set headers on a WebSocket, so the key travels as the `acp.bearer.<KEY>` subprotocol.
// Everything the agent sends is rendered as text, never as HTML.

const $ = (id) => document.getElementById(id);
const state = { ws: null, nextId: 1, pending: new Map(), current: null, toolCards: new Map(), lastMessage: null };

$("key").value = localStorage.getItem("acp-gateway-key") ?? "";
$("agent").value = localStorage.getItem("acp-gateway-agent") ?? "demo";

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  localStorage.setItem("acp-gateway-key", $("key").value);
  localStorage.setItem("acp-gateway-agent", $("agent").value);
  connect().catch((error) => status(`Could not connect: ${error.message}`));
});

$("new-session").addEventListener("click", async () => {
  const result = await request("session/new", { cwd: "/", mcpServers: [] });
  await refreshSessions();
  openSession(result.sessionId, true);
});

$("prompt").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("prompt-text").value.trim();
  if (!text || !state.current) return;
  $("prompt-text").value = "";
  addMessage("user", text);
  request("session/prompt", { sessionId: state.current, prompt: [{ type: "text", text }] })
    .then((result) => notice(`Turn ended: ${result.stopReason}`))
    .catch((error) => notice(`Prompt failed: ${error.message}`));
});

$("cancel").addEventListener("click", () => {
  if (state.current) send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: state.current } });
});

async function connect() {
  const key = $("key").value;
  state.ws?.close();
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${scheme}//${location.host}/acp?agent=${encodeURIComponent($("agent").value)}`, [
    "acp.v1",
    `acp.bearer.${key}`,
  ]);
  state.ws = ws;
  ws.addEventListener("message", (event) => onMessage(JSON.parse(event.data)));
  ws.addEventListener("close", (event) => status(`Disconnected (${event.code}${event.reason ? `: ${event.reason}` : ""}).`));
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", () => reject(new Error("the gateway refused the connection (check the key and agent)")), { once: true });
  });
  const init = await request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const connected = init._meta?.acpGateway?.agentConnected;
  status(`Connected. Agent "${$("agent").value}" is ${connected ? "online" : "offline"}.`);
  $("new-session").disabled = false;
  await refreshSessions();
}

async function refreshSessions() {
  const response = await fetch("/v1/sessions?limit=200", { headers: { Authorization: `Bearer ${$("key").value}` } });
  if (!response.ok) throw new Error((await response.json()).error?.message ?? response.statusText);
  const { items } = await response.json();
  const list = $("sessions");
  list.replaceChildren();
  for (const session of items.sort((a, b) => b.updatedAt - a.updatedAt)) {
    const li = document.createElement("li");
    li.textContent = session.title ?? `${session.agent} · ${session.cwd}`;
    li.title = session.id;
    li.dataset.id = session.id;
    li.addEventListener("click", () => openSession(session.id, false));
    list.append(li);
  }
}

async function openSession(sessionId, isNew) {
  state.current = sessionId;
  state.toolCards.clear();
  state.lastMessage = null;
  $("transcript").replaceChildren();
  $("permissions").replaceChildren();
  for (const li of $("sessions").children) li.classList.toggle("active", li.dataset.id === sessionId);
  $("prompt").hidden = false;
  status(`Session ${sessionId}`);
  if (!isNew) await request("session/load", { sessionId, cwd: "/", mcpServers: [] });
}

function onMessage(message) {
  if (message.id !== undefined && message.method === undefined) {
    const waiter = state.pending.get(message.id);
    state.pending.delete(message.id);
    if (waiter) message.error ? waiter.reject(new Error(message.error.message)) : waiter.resolve(message.result);
    else if (message.error) notice(`Gateway: ${message.error.message}`);
    return;
  }
  const params = message.params ?? {};
  if (params.sessionId !== undefined && params.sessionId !== state.current) {
    if (message.id !== undefined) send({ jsonrpc: "2.0", id: message.id, error: { code: -32603, message: "not shown in this console" } });
    return;
  }
  switch (message.method) {
    case "session/update":
      return onUpdate(params.update);
    case "session/request_permission":
      return showPermission(message.id, params);
    case "$/cancel_request":
      return document.querySelector(`[data-request="${CSS.escape(String(params.requestId))}"]`)?.remove();
    case "_acp_gateway/permission_resolved": {
      const by = params.decidedBy ?? {};
      const who = by.type === "person" ? (by.user ?? "someone") : by.type === "rule" ? `rule: ${by.description}` : by.type;
      return notice(`Permission for ${params.toolCallId} resolved (${params.outcome?.outcome ?? "?"}) by ${who}`);
    }
    case "_acp_gateway/rule_created":
      return notice(`Remembered for the team: ${params.rule.description}`);
    case "_acp_gateway/turn_ended":
      return notice(params.message);
    default:
      if (message.id !== undefined)
        send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `${message.method} is not supported by the web console` } });
  }
}

function onUpdate(update) {
  if (!update) return;
  if (update.sessionUpdate === "agent_message_chunk" || update.sessionUpdate === "user_message_chunk") {
    const role = update.sessionUpdate === "user_message_chunk" ? "user" : "agent";
    const text = update.content?.type === "text" ? update.content.text : `[${update.content?.type}]`;
    if (state.lastMessage?.role === role) state.lastMessage.node.textContent += text;
    else addMessage(role, text);
    return;
  }
  if (update.sessionUpdate === "tool_call" || update.sessionUpdate === "tool_call_update") {
    const card = state.toolCards.get(update.toolCallId) ?? newToolCard(update.toolCallId);
    for (const [key, value] of Object.entries(update)) if (value !== null && value !== undefined) card.call[key] = value;
    renderTool(card);
    state.lastMessage = null;
  }
}

function addMessage(role, text) {
  const node = document.createElement("div");
  node.className = `msg ${role}`;
  node.textContent = text;
  $("transcript").append(node);
  state.lastMessage = { role, node };
}

function newToolCard(toolCallId) {
  const node = document.createElement("div");
  node.className = "tool";
  $("transcript").append(node);
  const card = { node, call: { toolCallId, status: "pending" } };
  state.toolCards.set(toolCallId, card);
  return card;
}

function renderTool(card) {
  const { call } = card;
  card.node.replaceChildren(
    line(`${call.kind ?? "other"} · `, operationOf(call), `  [${call.status}]`),
    line("Agent says: ", call.title ?? ""),
  );
  card.node.lastChild.className = "muted";
  card.node.firstChild.lastChild.className = `status-${call.status}`;
}

/** The operation in full, from what it is: the command, or the paths. */
function operationOf(call) {
  const input = call.rawInput ?? {};
  const command = typeof input === "string" ? input : (input.command ?? input.cmd);
  if (command) return Array.isArray(command) ? command.join(" ") : String(command);
  const paths = [...(call.locations ?? []).map((l) => l.path), ...(call.content ?? []).filter((c) => c.type === "diff").map((c) => c.path)];
  return paths.length > 0 ? [...new Set(paths)].join(", ") : (call.name ?? call.toolCallId);
}

function showPermission(id, params) {
  const box = document.createElement("div");
  box.className = "perm";
  box.dataset.request = String(id);
  box.append(
    line("Permission to run ", operationOf(params.toolCall ?? {}), ` (${params.toolCall?.kind ?? "other"})`),
    line("Agent says: ", params.toolCall?.title ?? ""),
  );
  const buttons = document.createElement("div");
  for (const option of params.options ?? []) {
    const button = document.createElement("button");
    button.textContent = `${option.name} (${option.kind})`;
    button.addEventListener("click", () => {
      send({ jsonrpc: "2.0", id, result: { outcome: { outcome: "selected", optionId: option.optionId } } });
      box.remove();
    });
    buttons.append(button);
  }
  box.append(buttons);
  $("permissions").append(box);
}

/** A line of text; with three parts, the middle one (a command or paths, shown in full) is code. */
function line(...parts) {
  const div = document.createElement("div");
  for (const [i, part] of parts.entries()) {
    const span = document.createElement(i === 1 && parts.length > 2 ? "code" : "span");
    span.textContent = part;
    div.append(span);
  }
  return div;
}

function notice(text) {
  const node = document.createElement("div");
  node.className = "notice";
  node.textContent = text;
  $("transcript").append(node);
  state.lastMessage = null;
}

function status(text) {
  $("status").textContent = text;
}

function send(message) {
  state.ws?.send(JSON.stringify(message));
}

function request(method, params) {
  const id = state.nextId++;
  send({ jsonrpc: "2.0", id, method, params });
  return new Promise((resolve, reject) => state.pending.set(id, { resolve, reject }));
}
