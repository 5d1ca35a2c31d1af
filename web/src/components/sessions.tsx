// The tenant's sessions, live ones first (a turn running or approvals waiting), with agent, project,
// title, turn state, approvals waiting and last activity; starting a session in a project; and the
// open session beside the list (on a phone, instead of it).

import { useCallback, useEffect, useState } from "preact/hooks";
import { type Api, type Auth, type Page, type Session, type Snapshot } from "../api";
import { ago, errorText } from "../format";
import { SessionLink } from "../link";
import { SessionView } from "./session-view";
import { Safe } from "./shown";

/** Snapshots (turn state, approvals) are read for this many of the most recent sessions. */
const SNAPSHOTS = 25;
const REFRESH_MS = 15_000;

interface Entry {
  session: Session;
  snapshot: Snapshot | null;
}

interface Open {
  link: SessionLink;
  session: Session;
  isNew: boolean;
}

export function SessionsPage({ auth, api }: { auth: Auth; api: Api }) {
  const [entries, setEntries] = useState<Entry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<Open | null>(null);
  const [opening, setOpening] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);

  const refresh = useCallback(async () => {
    try {
      const page = await api.get<Page<Session>>("/v1/sessions?limit=200");
      const recent = [...page.items].sort((a, b) => b.updatedAt - a.updatedAt);
      const snapshots = await Promise.all(
        recent.slice(0, SNAPSHOTS).map((s) => api.get<Snapshot>(`/v1/sessions/${encodeURIComponent(s.id)}`).catch(() => null)),
      );
      const list = recent.map((session, i) => ({ session, snapshot: snapshots[i] ?? null }));
      list.sort((a, b) => Number(isLive(b)) - Number(isLive(a)) || b.session.updatedAt - a.session.updatedAt);
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
      const link = await SessionLink.open(auth.key, session.agent);
      setOpen({ link, session, isNew: false });
    } catch (e) {
      setError(`Could not open the session: ${errorText(e)}`);
    } finally {
      setOpening(null);
    }
  };

  return (
    <div class={`sessions-page${open ? " has-open" : ""}`}>
      <section class="session-list" aria-labelledby="sessions-title">
        <div class="list-head">
          <h2 id="sessions-title">Sessions</h2>
          <button onClick={() => void refresh()}>Refresh</button>
          <button class="primary" onClick={() => setCreating(!creating)} aria-expanded={creating}>
            New session
          </button>
        </div>
        {creating && (
          <NewSession
            auth={auth}
            onCreated={(link, session) => {
              setCreating(false);
              setOpen({ link, session, isNew: true });
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
          {entries?.map(({ session, snapshot }) => (
            <li key={session.id}>
              <button
                class="entry"
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
                  <TurnBadge snapshot={snapshot} />
                  {snapshot && snapshot.pendingPermissions.length > 0 && (
                    <span class="badge attention">
                      {snapshot.pendingPermissions.length} approval{snapshot.pendingPermissions.length > 1 ? "s" : ""} waiting
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
            key={`${open.session.id}:${open.link.connectionId ?? ""}`}
            api={api}
            link={open.link}
            session={open.session}
            isNew={open.isNew}
            onBack={() => {
              setOpen(null);
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

function isLive(e: Entry): boolean {
  return !!e.snapshot && (e.snapshot.turn.state !== "idle" || e.snapshot.pendingPermissions.length > 0);
}

function TurnBadge({ snapshot }: { snapshot: Snapshot | null }) {
  if (!snapshot) return null;
  const state = snapshot.turn.state;
  return <span class={`badge turn-${state}`}>{state === "idle" ? "idle" : state === "running" ? "● running" : "cancelling"}</span>;
}

const PROJECT = "acp-gateway-console-project";

function NewSession({ auth, onCreated }: { auth: Auth; onCreated(link: SessionLink, session: Session): void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const cwd = String(form.get("cwd") ?? "").trim();
    const agent = String(form.get("agent") ?? "").trim() || auth.agent;
    if (!cwd.startsWith("/")) {
      setError("The project path must be absolute, like /home/me/project.");
      return;
    }
    setBusy(true);
    setError(null);
    let link: SessionLink | null = null;
    try {
      link = await SessionLink.open(auth.key, agent);
      const result = await link.client.request<{ sessionId: string }>("session/new", { cwd, mcpServers: [] });
      sessionStorage.setItem(PROJECT, cwd);
      const now = Date.now();
      onCreated(link, { id: result.sessionId, agent, cwd, title: null, createdBy: null, createdAt: now, updatedAt: now });
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
        <input name="cwd" required placeholder="/home/me/project" defaultValue={sessionStorage.getItem(PROJECT) ?? ""} autocomplete="off" />
      </label>
      <label>
        Agent
        <input name="agent" defaultValue={auth.agent} required autocomplete="off" />
      </label>
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
