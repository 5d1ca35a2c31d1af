// Sign-in and the console's three views. The key is kept in sessionStorage: it lasts while the tab
// is open and is gone when the browser session ends, never written to localStorage.

import { useMemo, useState } from "preact/hooks";
import { Api, ApiError, type Auth } from "../api";
import { errorText } from "../format";
import { AuditPage } from "./audit";
import { RulesPage } from "./rules";
import { SessionsPage } from "./sessions";

const KEY = "acp-gateway-console-key";
const AGENT = "acp-gateway-console-agent";

function storedAuth(): Auth | null {
  const key = sessionStorage.getItem(KEY);
  return key ? { key, agent: sessionStorage.getItem(AGENT) ?? "demo" } : null;
}

export function App() {
  const [auth, setAuth] = useState<Auth | null>(storedAuth);
  const signOut = () => {
    sessionStorage.removeItem(KEY);
    setAuth(null);
  };
  return auth ? (
    <Console auth={auth} onSignOut={signOut} />
  ) : (
    <SignIn
      onSignedIn={(a) => {
        sessionStorage.setItem(KEY, a.key);
        sessionStorage.setItem(AGENT, a.agent);
        setAuth(a);
      }}
    />
  );
}

function SignIn({ onSignedIn }: { onSignedIn(auth: Auth): void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const auth = { key: String(form.get("key") ?? "").trim(), agent: String(form.get("agent") ?? "").trim() || "demo" };
    setBusy(true);
    setError(null);
    try {
      // The gateway refuses a bad key with 401 before a WebSocket upgrade, which a browser cannot
      // read; the same key on the REST API says so plainly.
      await new Api(auth.key).get("/v1/sessions?limit=1");
      onSignedIn(auth);
    } catch (e) {
      setError(
        e instanceof ApiError && e.status === 401 ? "That key was not accepted by the gateway. Check it and try again." : errorText(e),
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <form class="card signin-form" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">
          <img src="/favicon.svg" alt="" width={28} height={28} /> ACP Gateway console
        </h1>
        <p class="muted">Follow your team's agent sessions and answer their permission requests.</p>
        <label>
          Key
          <input name="key" type="password" autocomplete="off" required placeholder="a client or admin key" />
        </label>
        <label>
          Agent
          <input name="agent" defaultValue={sessionStorage.getItem(AGENT) ?? "demo"} required autocomplete="off" />
        </label>
        <p class="hint">The key is kept in this tab only, until you sign out or close the browser.</p>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button class="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}

type Tab = "sessions" | "rules" | "audit";

function Console({ auth, onSignOut }: { auth: Auth; onSignOut(): void }) {
  const api = useMemo(() => new Api(auth.key), [auth.key]);
  const [tab, setTab] = useState<Tab>("sessions");
  const tabs: [Tab, string][] = [
    ["sessions", "Sessions"],
    ["rules", "Rules"],
    ["audit", "Audit"],
  ];
  return (
    <div class="console">
      <header class="topbar">
        <span class="brand">
          <img src="/favicon.svg" alt="" width={22} height={22} /> <span class="brand-name">ACP Gateway</span>
        </span>
        <nav aria-label="Views">
          {tabs.map(([id, label]) => (
            <button key={id} class="tab" aria-current={tab === id ? "page" : undefined} onClick={() => setTab(id)}>
              {label}
            </button>
          ))}
        </nav>
        <button class="quiet" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <div class="view">
        <div hidden={tab !== "sessions"}>
          <SessionsPage auth={auth} api={api} />
        </div>
        {tab === "rules" && <RulesPage api={api} />}
        {tab === "audit" && <AuditPage api={api} />}
      </div>
    </div>
  );
}
