// Sign-in and the console's three views. A person signs in through their team's provider where the
// tenant configured one (sign-in.ts: authorization code + PKCE, decision 0030), or with a key. The
// key or the person's token is kept in sessionStorage: it lasts while the tab is open and is gone
// when the browser session ends or on sign-out, never written to localStorage. A token that expires
// (or that the gateway stops accepting) signs the console out, saying why.

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { Api, ApiError, type Auth, type Credential, type Me, signInInfo } from "../api";
import { errorText } from "../format";
import { type PersonToken, SignInError, finishSignIn, startSignIn } from "../sign-in";
import { AuditPage } from "./audit";
import { RulesPage } from "./rules";
import { SessionsPage } from "./sessions";
import { SettingsPage } from "./settings";
import { WaitingOnYou } from "./waiting";

const KEY = "acp-gateway-console-key";
const TOKEN = "acp-gateway-console-token";
const AGENT = "acp-gateway-console-agent";
const MAX_TIMER_MS = 2 ** 31 - 1;

function storedAuth(): Auth | null {
  const agent = sessionStorage.getItem(AGENT) ?? "demo";
  const key = sessionStorage.getItem(KEY);
  if (key) return { credential: { type: "key", key }, agent };
  const token = sessionStorage.getItem(TOKEN);
  if (!token) return null;
  // SAFETY: written by store() below, from a PersonToken.
  const person = JSON.parse(token) as PersonToken;
  return { credential: { type: "token", ...person }, agent };
}

function store(auth: Auth): void {
  const c = auth.credential;
  if (c.type === "key") sessionStorage.setItem(KEY, c.key);
  else sessionStorage.setItem(TOKEN, JSON.stringify({ token: c.token, tenant: c.tenant, issuer: c.issuer, expiresAt: c.expiresAt }));
  sessionStorage.setItem(AGENT, auth.agent);
}

function forget(): void {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(TOKEN);
}

function hostOf(issuer: string): string {
  try {
    return new URL(issuer).host;
  } catch {
    return issuer;
  }
}

function expiredText(c: Credential): string {
  return c.type === "token"
    ? `Your sign-in with ${hostOf(c.issuer)} expired at ${new Date(c.expiresAt).toLocaleTimeString()}. Sign in again.`
    : "Signed out.";
}

/** `callback`: the provider's answer, already taken out of the address bar (main.tsx), when this page is the sign-in callback. */
export function App({ callback }: { callback: URLSearchParams | null }) {
  const [auth, setAuth] = useState<Auth | null>(() => {
    if (callback) return null;
    const a = storedAuth();
    if (a?.credential.type === "token" && a.credential.expiresAt <= Date.now()) {
      forget();
      return null;
    }
    return a;
  });
  const [notice, setNotice] = useState<string | null>(null);
  const [finishing, setFinishing] = useState(callback !== null);

  const signOut = (why: string | null = null) => {
    forget();
    setAuth(null);
    setNotice(why);
  };

  // The provider sent the browser back: finish the sign-in once, then check the token with the gateway.
  useEffect(() => {
    if (!callback) return;
    void (async () => {
      try {
        const person = await finishSignIn(callback);
        const credential: Credential = {
          type: "token",
          token: person.token,
          tenant: person.tenant,
          issuer: person.issuer,
          expiresAt: person.expiresAt,
        };
        await new Api(credential).get<Me>("/v1/me");
        const signedIn = { credential, agent: person.agent };
        store(signedIn);
        setAuth(signedIn);
      } catch (e) {
        forget();
        setNotice(e instanceof SignInError ? e.message : errorText(e));
      } finally {
        setFinishing(false);
      }
    })();
  }, []);

  // A person's token stops working at its expiry: sign out then, and say so. (A timer holds at most
  // 2^31-1 ms, about 24 days; a longer-lived token is waited for in steps.)
  useEffect(() => {
    if (auth?.credential.type !== "token") return;
    const credential = auth.credential;
    let timer: ReturnType<typeof setTimeout>;
    const wait = () => {
      const left = credential.expiresAt - Date.now();
      timer = left <= 0 ? setTimeout(() => signOut(expiredText(credential)), 0) : setTimeout(wait, Math.min(left, MAX_TIMER_MS));
    };
    wait();
    return () => clearTimeout(timer);
  }, [auth]);

  if (finishing)
    return (
      <main class="signin">
        <p class="card signin-form" role="status">
          Finishing sign-in…
        </p>
      </main>
    );
  return auth ? (
    <Console auth={auth} onSignOut={signOut} />
  ) : (
    <SignIn
      notice={notice}
      onSignedIn={(a) => {
        store(a);
        setNotice(null);
        setAuth(a);
      }}
    />
  );
}

function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn(auth: Auth): void }) {
  const [error, setError] = useState<string | null>(notice);
  // Not an error: where the tenant has no provider, the key form is the way in.
  const [info, setInfo] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const keyField = useRef<HTMLInputElement>(null);
  useEffect(() => setError(notice), [notice]);

  const submitKey = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const auth: Auth = {
      credential: { type: "key", key: String(form.get("key") ?? "").trim() },
      agent: String(form.get("agent") ?? "").trim() || "demo",
    };
    setBusy(true);
    setError(null);
    setInfo(null);
    try {
      // The gateway refuses a bad key with 401 before a WebSocket upgrade, which a browser cannot
      // read; the same key on the REST API says so plainly.
      await new Api(auth.credential).get("/v1/me");
      onSignedIn(auth);
    } catch (e) {
      setError(
        e instanceof ApiError && e.status === 401 ? "That key was not accepted by the gateway. Check it and try again." : errorText(e),
      );
    } finally {
      setBusy(false);
    }
  };

  // Where the tenant has a provider, off to it; otherwise the key form below is how this tenant signs in.
  const submitTenant = async (event: Event) => {
    event.preventDefault();
    const tenant = String(new FormData(event.currentTarget as HTMLFormElement).get("tenant") ?? "").trim();
    setBusy(true);
    setError(null);
    setInfo(null);
    try {
      const how = await signInInfo(tenant);
      if (how.method === "provider" && how.provider) {
        location.assign(await startSignIn(tenant, sessionStorage.getItem(AGENT) ?? "demo", how.provider));
        return;
      }
      setInfo(`Tenant “${tenant}” signs in with a key: enter yours below.`);
      keyField.current?.focus();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin">
      <div class="card signin-form">
        <h1 id="signin-title">
          <img src="/favicon.svg" alt="" width={28} height={28} /> ACP Gateway console
        </h1>
        <p class="muted">Follow your team's agent sessions and answer their permission requests.</p>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {info && (
          <p class="notice" role="status">
            {info}
          </p>
        )}
        <form class="signin-team" onSubmit={submitTenant} aria-label="Your team's provider">
          <label>
            Tenant
            <input
              name="tenant"
              required
              autocomplete="organization"
              placeholder="your team's tenant, e.g. acme"
              pattern="[a-z0-9][a-z0-9\-]{1,62}"
              defaultValue={new URLSearchParams(location.search).get("tenant") ?? ""}
            />
          </label>
          <button disabled={busy}>Continue with your team's provider</button>
        </form>
        <p class="hint divider">or with a key</p>
        <form onSubmit={submitKey} aria-labelledby="signin-title">
          <label>
            Key
            <input ref={keyField} name="key" type="password" autocomplete="off" required placeholder="a client or admin key" />
          </label>
          <label>
            Agent
            <input name="agent" defaultValue={sessionStorage.getItem(AGENT) ?? "demo"} required autocomplete="off" />
          </label>
          <p class="hint">The key, or your sign-in, is kept in this tab only, until you sign out or close the browser.</p>
          <button class="primary" disabled={busy}>
            {busy ? "Signing in…" : "Sign in"}
          </button>
        </form>
      </div>
    </main>
  );
}

type Tab = "sessions" | "rules" | "audit" | "settings";

function Console({ auth, onSignOut }: { auth: Auth; onSignOut(why?: string | null): void }) {
  const api = useMemo(
    () => new Api(auth.credential, (why) => onSignOut(`The gateway no longer accepts your sign-in (${why}). Sign in again.`)),
    [auth.credential],
  );
  const [tab, setTab] = useState<Tab>("sessions");
  // A link to a session (the audit's) shows the sessions view, which opens it (sessions.tsx).
  useEffect(() => {
    const onHash = () => {
      if (location.hash.startsWith("#/session/")) setTab("sessions");
    };
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  const tabs: [Tab, string][] = [
    ["sessions", "Sessions"],
    ["rules", "Rules"],
    ["audit", "Audit"],
    ["settings", "Settings"],
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
        <Who api={api} />
        <button class="quiet" onClick={() => onSignOut(null)}>
          Sign out
        </button>
      </header>
      <div class="view">
        <div hidden={tab !== "sessions"}>
          <WaitingOnYou api={api} />
          <SessionsPage auth={auth} api={api} />
        </div>
        {tab === "rules" && <RulesPage api={api} />}
        {tab === "audit" && <AuditPage api={api} />}
        {tab === "settings" && <SettingsPage api={api} />}
      </div>
    </div>
  );
}

/** Who is signed in, as the gateway names them (GET /v1/me): a person's name and their provider, or the key's label. */
function Who({ api }: { api: Api }) {
  const [me, setMe] = useState<Me | null>(null);
  useEffect(() => {
    api
      .get<Me>("/v1/me")
      .then(setMe)
      .catch(() => setMe(null));
  }, [api]);
  if (!me) return null;
  const person = me.credential === "token" ? me.person : null;
  return (
    <span class="who" aria-label="Signed in as" title={person ? `${person.subject} at ${person.issuer}` : undefined}>
      {person ? (
        <>
          <span class="who-name">{person.name}</span> <span class="muted">{hostOf(person.issuer)}</span>
        </>
      ) : (
        <>
          <span class="who-name">{me.label ?? "a key"}</span> <span class="muted">key</span>
        </>
      )}
    </span>
  );
}
