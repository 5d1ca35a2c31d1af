// The tenant's sessions, live ones first (a turn running or approvals waiting), with agent, project,
// title, turn state, approvals waiting and last activity; starting a session in a project; and the
// open session beside the list (on a phone, instead of it). The open session is in the URL
// (#/session/<id>), so a reload, a shared link or a link in the page ("waiting on you") opens it.

import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { type Agent, type Api, type Auth, type Page, type Session, type Snapshot } from "../api";
import { ago, errorText } from "../format";
import { SessionLink } from "../link";
import { SessionView } from "./session-view";
import { type SessionAddress, parseSessionAddress, sessionAddress } from "../session-address";
import { Safe } from "./shown";

const REFRESH_MS = 15_000;

interface Open {
  link: SessionLink;
  session: Session;
  isNew: boolean;
}

export function SessionsPage({ auth, api }: { auth: Auth; api: Api }) {
  const [entries, setEntries] = useState<Session[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<Open | null>(null);
  const [opening, setOpening] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);

  const refresh = useCallback(async () => {
    try {
      const page = await api.get<Page<Session>>("/v1/sessions?limit=200");
      // One call: each session's turn and waiting approvals come with the list (the index holds them).
      const list = [...page.items].sort((a, b) => Number(isLive(b)) - Number(isLive(a)) || b.updatedAt - a.updatedAt);
      setEntries(list);
      setError(null);
    } catch (e) {
      setError(`Could not list the sessions: ${errorText(e)}`);
    }
  }, [api]);

  useEffect(() => {
    void refresh();
    const timer = setInterval(() => void refresh(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [refresh]);

  const openSession = async (session: Session) => {
    setOpening(session.id);
    setError(null);
    try {
      const link = await SessionLink.open(api, session.agent);
      setOpen({ link, session, isNew: false });
      showInUrl(session.id);
    } catch (e) {
      setError(`Could not open the session: ${errorText(e)}`);
    } finally {
      setOpening(null);
    }
  };

  // The session the URL names (on load, or a link followed since, the audit's): from the list, or (older than the list) from its snapshot.
  const [wanted, setWanted] = useState(sessionInUrl());
  useEffect(() => {
    const onHash = () => setWanted(sessionInUrl());
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  // The card the address named (a "waiting on you" link): focused once the session shows it.
  const [focusCard, setFocusCard] = useState<{ card: string } | null>(null);
  useEffect(() => {
    if (wanted === null || entries === null) return;
    const id = wanted.sessionId;
    setWanted(null);
    if (wanted.card !== null) setFocusCard({ card: wanted.card });
    if (open?.session.id === id) return showInUrl(id);
    const listed = entries.find((session) => session.id === id);
    if (listed) return void openSession(listed);
    api
      .get<Snapshot>(`/v1/sessions/${encodeURIComponent(id)}`)
      .then((s) =>
        openSession({
          id,
          agent: s.agent,
          cwd: s.cwd,
          title: s.title,
          createdBy: null,
          createdAt: 0,
          updatedAt: 0,
          state: { turn: s.turn.state, waiting: s.pendingPermissions.length },
        }),
      )
      .catch((e: unknown) => {
        showInUrl(null);
        setError(`Could not open the session in the address: ${errorText(e)}`);
      });
  }, [entries, wanted]);

  // Back from a session: focus returns to its entry in the list, never to the page.
  const [returnTo, setReturnTo] = useState<string | null>(null);
  useEffect(() => {
    if (returnTo === null || open) return;
    const entry = [...document.querySelectorAll<HTMLElement>(".entry[data-session]")].find((e) => e.dataset.session === returnTo);
    (entry ?? document.getElementById("sessions-title"))?.focus();
    setReturnTo(null);
  }, [returnTo, open, entries]);

  return (
    <div class={`sessions-page${open ? " has-open" : ""}`}>
      <section class="session-list" aria-labelledby="sessions-title">
        <div class="list-head">
          <h2 id="sessions-title" tabIndex={-1}>
            Sessions
          </h2>
          <button onClick={() => void refresh()}>Refresh</button>
          <button class="primary" onClick={() => setCreating(!creating)} aria-expanded={creating}>
            New session
          </button>
        </div>
        {creating && (
          <NewSession
            auth={auth}
            api={api}
            onCreated={(link, session) => {
              setCreating(false);
              setOpen({ link, session, isNew: true });
              showInUrl(session.id);
              void refresh();
            }}
          />
        )}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {entries === null && !error && <p class="muted">Loading…</p>}
        {entries?.length === 0 && <p class="muted">No sessions yet. Start one with “New session”.</p>}
        <ul class="entries">
          {entries?.map((session) => (
            <li key={session.id}>
              <button
                class="entry"
                data-session={session.id}
                aria-current={open?.session.id === session.id ? "true" : undefined}
                onClick={() => void openSession(session)}
                disabled={opening === session.id}
              >
                <span class="entry-title">{session.title !== null ? <Safe text={session.title} /> : "Untitled session"}</span>
                <span class="entry-meta">
                  <span class="badge">
                    <Safe text={session.agent} />
                  </span>{" "}
                  <code class="path">
                    <Safe text={session.cwd} />
                  </code>
                </span>
                <span class="entry-meta">
                  <TurnBadge state={session.state} />
                  {session.state.waiting > 0 && (
                    <span class="badge attention">
                      {session.state.waiting} approval{session.state.waiting > 1 ? "s" : ""} waiting
                    </span>
                  )}
                  <span class="muted">{ago(session.updatedAt)}</span>
                </span>
              </button>
            </li>
          ))}
        </ul>
      </section>
      <section class="session-pane" aria-label="Open session">
        {open ? (
          <SessionView
            // Keyed on the link, not its connection id: that changes on every reconnect, and a remount closes the link for good.
            key={`${open.session.id}:${open.link.id}`}
            api={api}
            link={open.link}
            // The list's entry once it has one: the title the gateway gave reaches the header.
            session={entries?.find((e) => e.id === open.session.id) ?? open.session}
            isNew={open.isNew}
            focusCard={focusCard}
            onBack={() => {
              setReturnTo(open.session.id);
              setOpen(null);
              showInUrl(null);
              void refresh();
            }}
          />
        ) : (
          <p class="muted empty">Open a session to follow it live, or start a new one.</p>
        )}
      </section>
    </div>
  );
}

function isLive(session: Session): boolean {
  return session.state.turn !== "idle" || session.state.waiting > 0;
}

function TurnBadge({ state: { turn: state } }: { state: Session["state"] }) {
  return <span class={`badge turn-${state}`}>{state === "idle" ? "idle" : state === "running" ? "● running" : "cancelling"}</span>;
}

const PROJECT = "acp-gateway-console-project";

function NewSession({ auth, api, onCreated }: { auth: Auth; api: Api; onCreated(link: SessionLink, session: Session): void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The tenant's agents, to choose from and to tell an unknown name from an offline agent; null until known.
  const [agents, setAgents] = useState<Agent[] | null>(null);
  // The same read as a promise, so a person who submits before it arrived still gets the precise message.
  const agentsRead = useRef<Promise<Agent[] | null>>(Promise.resolve(null));
  const project = useRef<HTMLInputElement>(null);
  // Focused as the form is put on the page, in the same task (a layout effect). useEffect waited for the
  // next frame, and keys already being typed into the Agent field went into the project path instead
  // (a session started in "/projects/democonsole-demo-…").
  useLayoutEffect(() => project.current?.focus(), []);
  useEffect(() => {
    agentsRead.current = api
      .get<Page<Agent>>("/v1/agents?status=1&limit=100")
      .then((page) => page.items)
      .catch(() => null);
    void agentsRead.current.then(setAgents);
  }, [api]);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const cwd = String(form.get("cwd") ?? "").trim();
    const agent = String(form.get("agent") ?? "").trim() || auth.agent;
    if (!cwd.startsWith("/")) {
      setError("The project path must be absolute, like /home/me/project.");
      return;
    }
    const list = await agentsRead.current;
    const known = list?.find((a) => a.name === agent);
    if (list && !known) {
      const names = list.map((a) => `“${a.name}”`).join(", ");
      setError(`There is no agent named “${agent}” in this tenant.${names ? ` Its agents: ${names}.` : " It has no agents yet."}`);
      return;
    }
    if (known?.failing) {
      setError(`Agent “${agent}” is failing: ${known.failing}`);
      return;
    }
    if (known?.connected === false) {
      setError(`Agent “${agent}” is offline: it is registered but not connected to the gateway. Start it, then try again.`);
      return;
    }
    setBusy(true);
    setError(null);
    let link: SessionLink | null = null;
    try {
      link = await SessionLink.open(api, agent);
      const result = await link.client.request<{ sessionId: string }>("session/new", { cwd, mcpServers: [] });
      sessionStorage.setItem(PROJECT, cwd);
      const now = Date.now();
      onCreated(link, {
        id: result.sessionId,
        agent,
        cwd,
        title: null,
        createdBy: null,
        createdAt: now,
        updatedAt: now,
        state: { turn: "idle", waiting: 0 },
      });
    } catch (e) {
      link?.close();
      setError(`Could not start a session with agent “${agent}”: ${errorText(e)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card new-session" onSubmit={submit} aria-label="New session">
      <label>
        Project path
        <input
          ref={project}
          name="cwd"
          required
          placeholder="/home/me/project"
          defaultValue={sessionStorage.getItem(PROJECT) ?? ""}
          autocomplete="off"
        />
      </label>
      <label>
        Agent
        <input name="agent" defaultValue={auth.agent} required autocomplete="off" list="tenant-agents" />
      </label>
      <datalist id="tenant-agents">
        {agents?.map((a) => (
          <option key={a.name} value={a.name}>
            {a.failing
              ? `failing: ${a.failing}`
              : a.connected === true
                ? "connected"
                : a.connected === false
                  ? "offline"
                  : a.mode === "dial_out"
                    ? "dialled by the gateway"
                    : ""}
            {a.decidesItself ? ` · decides itself (ran ${a.decidesItself.kind} unasked ${ago(a.decidesItself.at)})` : ""}
          </option>
        ))}
      </datalist>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <button class="primary" disabled={busy}>
        {busy ? "Starting…" : "Start session"}
      </button>
    </form>
  );
}

/** The session (and the card) the address names (session-address.ts), if any. */
function sessionInUrl(): SessionAddress | null {
  return parseSessionAddress(location.hash);
}

/** Puts the open session in the address (or takes it out), without a new history entry per click. */
function showInUrl(sessionId: string | null): void {
  const url = sessionId === null ? `${location.pathname}${location.search}` : sessionAddress(sessionId);
  history.replaceState(null, "", url);
}
