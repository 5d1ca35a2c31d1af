// One session, live: the transcript (history replayed by session/load, then live updates), the
// permission requests waiting for an answer, and the prompt bar with cancel.

import { useEffect, useRef, useState } from "preact/hooks";
import { type Incoming, isObject } from "../acp";
import type { Api, Me as SignedIn, Session, Snapshot } from "../api";
import { errorText } from "../format";
import type { LinkState, SessionLink } from "../link";
import {
  EMPTY,
  type Me,
  type Transcript,
  applyUpdate,
  authorOf,
  modeChangeDecided,
  modeChangeDecision,
  modeChangeWaiting,
  modeChangesWaiting,
  notice,
  operationChanged,
  unseenChanges,
  pendingCount,
  permissionAnswered,
  permissionRequested,
  permissionResolved,
  permissionWithdrawn,
  ruleCreated,
  turnEnded,
  userMessage,
} from "../transcript";
import { shownClaim } from "../unseen-diffs";
import { promptRefusal } from "../prompt-queue";
import { Markdown, PermissionCard, PlanView, ToolCard } from "./cards";
import { ModeChangeCard } from "./mode-change-card";
import { Safe } from "./shown";
import { type Decider, agentModeChanged, currentModeText, deciderOf, modeReported } from "../mode-changes";
import type { SessionModes } from "../../../protocol/people/session-modes";
import { DECIDE_MODE_CHANGE } from "../../../protocol/people/mode-approval";
import { ErrorCode } from "../../../core/rpc-errors";
import { GATEWAY_NOTIFICATIONS } from "../../../core/gateway-notifications";
import { titleFromPrompt } from "../../../protocol/session-title";

/** The shortcut that moves focus to the first waiting request's first option, from anywhere in the session. */
const ANSWER_SHORTCUT = { label: "Alt+Shift+A", aria: "Alt+Shift+A", code: "KeyA" };

/** The cards that wait on a person: permission requests and held mode changes. */
const WAITING_CARDS = "section.permission.open, section.mode-change.open";

/** How often a turn started elsewhere is checked for its end. */
const TURN_POLL_MS = 3000;

interface Props {
  api: Api;
  link: SessionLink;
  session: Session;
  isNew: boolean;
  /** A card to focus once it shows (a "waiting on you" link): a tool call's id, or "" for the first request waiting; a new object each time. */
  focusCard?: { card: string } | null;
  onBack(): void;
}

export function SessionView({ api, link, session, isNew, focusCard = null, onBack }: Props) {
  const [t, setT] = useState<Transcript>(EMPTY);
  const [turn, setTurn] = useState<Snapshot["turn"]["state"]>("idle");
  const [title, setTitle] = useState(session.title);
  const [linkState, setLinkState] = useState<LinkState>(link.state);
  const [text, setText] = useState("");
  const update = (f: (t: Transcript) => Transcript) => setT((prev) => f(prev));
  const myTurn = useRef(false);
  // This page's prompts not yet answered: more than one when the agent queues prompts (decision 0067).
  const myPrompts = useRef(0);
  // Flips when this page's last prompt is answered: a turn that goes on (someone else's prompt joined it) is then polled.
  const [mineAnswered, setMineAnswered] = useState(0);
  // The gateway refused the last prompt without running it (the bound, a turn being cancelled): why.
  const [refused, setRefused] = useState<string | null>(null);
  // Set while the gateway holds the session (an agent ran a tool call unasked): why, and a way to resume.
  const [held, setHeld] = useState<string | null>(null);
  const [resumeError, setResumeError] = useState<string | null>(null);
  const resume = () => {
    setResumeError(null);
    api
      .delete(`/v1/sessions/${encodeURIComponent(session.id)}/hold`)
      .catch((e: unknown) => setResumeError(`Could not resume: ${errorText(e)}`));
  };
  // Who this page is signed in as: their prompts and answers say "you", replayed or live.
  const [myKeyId, setMyKeyId] = useState<string | null>(null);
  const me: Me = { keyId: myKeyId, connectionId: link.connectionId };
  // Who decides a held mode change here, as the gateway judges it (unknown until GET /v1/me answers: nothing greyed out).
  const [decider, setDecider] = useState<Decider>({ role: undefined, who: null });
  // The agent's modes (decision 0061): the snapshot's, then as the agent reports them.
  const [modes, setModes] = useState<SessionModes | null>(null);
  const article = useRef<HTMLElement>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const promptBox = useRef<HTMLTextAreaElement>(null);
  // After an answer, focus goes to the next waiting request (or the prompt) once the card has changed.
  const focusAfterAnswer = useRef(false);

  useEffect(() => {
    api
      .get<SignedIn>("/v1/me")
      .then((signedIn) => {
        setMyKeyId(signedIn.keyId);
        setDecider(deciderOf(signedIn));
      })
      .catch(() => undefined);
  }, [api]);

  // Focus never drops to the page: a new session's prompt box, an opened one's title.
  useEffect(() => (isNew ? promptBox.current : heading.current)?.focus(), []);

  // The list shows the title the gateway gave: the header follows it.
  useEffect(() => {
    if (session.title) setTitle(session.title);
  }, [session.title]);

  /** Focus on the first waiting request's first option this person may choose; false when none waits. */
  const focusFirstWaiting = (): boolean => {
    const card = article.current?.querySelector<HTMLElement>(WAITING_CARDS);
    if (!card) return false;
    (card.querySelector<HTMLElement>(".options button:not([disabled])") ?? card).focus();
    return true;
  };

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.altKey && e.shiftKey && !e.ctrlKey && !e.metaKey && e.code === ANSWER_SHORTCUT.code && focusFirstWaiting()) e.preventDefault();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);

  // The card a link named: focused and scrolled into view once its request is on screen (after the
  // history replays and the waiting copies arrive), once per link followed.
  const cardToFocus = useRef(focusCard);
  useEffect(() => {
    cardToFocus.current = focusCard;
  }, [focusCard]);
  useEffect(() => {
    const wanted = cardToFocus.current;
    if (!wanted) return;
    const open = [...(article.current?.querySelectorAll<HTMLElement>(WAITING_CARDS) ?? [])];
    const card = wanted.card === "" ? open[0] : open.find((c) => c.dataset.toolCallId === wanted.card || c.dataset.card === wanted.card);
    if (!card) return;
    cardToFocus.current = null;
    card.scrollIntoView({ block: "center" });
    card.focus({ preventScroll: true });
  }, [t, focusCard]);

  useEffect(() => {
    if (!focusAfterAnswer.current) return;
    focusAfterAnswer.current = false;
    if (!focusFirstWaiting()) promptBox.current?.focus();
  }, [t]);

  useEffect(() => {
    const onMessage = (m: Incoming) => {
      if (m.params.sessionId !== undefined && m.params.sessionId !== session.id) return;
      // The sentence a gateway notification carries for a person, or what to say when it carries none.
      const said = (fallback: string) => (typeof m.params.message === "string" ? m.params.message : fallback);
      switch (m.method) {
        case "session/update":
          if (isObject(m.params.update)) {
            const u = m.params.update;
            if (u.sessionUpdate === "session_info_update" && typeof u.title === "string") setTitle(u.title);
            if (u.sessionUpdate === "user_message_chunk" && !myTurn.current) setTurn("running");
            if (u.sessionUpdate === "current_mode_update") setModes((prev) => modeReported(prev, u));
            update((t) => applyUpdate(t, u, isObject(m.params._meta) ? m.params._meta : undefined));
          }
          return;
        case "session/request_permission":
          if (m.id !== undefined) {
            const id = m.id;
            update((t) => permissionRequested(t, id, m.params));
          }
          return;
        case "$/cancel_request":
          update((t) => permissionWithdrawn(t, m.params.requestId));
          return;
        case GATEWAY_NOTIFICATIONS.permissionResolved:
          update((t) => permissionResolved(t, m.params));
          return;
        case GATEWAY_NOTIFICATIONS.answeredByGateway:
          // The gateway answered a request by itself (outside a turn, after a cancel): what and why.
          update((t) => notice(t, said("The gateway answered a request by itself."), "warn"));
          return;
        case GATEWAY_NOTIFICATIONS.ruleCreated:
          update((t) => ruleCreated(t, m.params));
          return;
        case GATEWAY_NOTIFICATIONS.operationChanged:
          // The copy is withdrawn and a new one follows: say why beside it.
          update((t) => operationChanged(t, m.params));
          return;
        case GATEWAY_NOTIFICATIONS.unseenChanges:
          update((t) => unseenChanges(t, m.params));
          return;
        case GATEWAY_NOTIFICATIONS.ranUnasked:
          // The agent ran a tool call nobody was asked about (decision 0046): rules wait until a person allows a step.
          update((t) => notice(t, said("The agent ran a tool call without asking."), "warn"));
          return;
        case GATEWAY_NOTIFICATIONS.sessionHeld:
          // The tenant refuses agents that decide for themselves (decision 0056): no prompt until a person resumes.
          setHeld(said("The session is stopped."));
          update((t) => notice(t, said("The session is stopped."), "warn"));
          return;
        case GATEWAY_NOTIFICATIONS.sessionResumed:
          setHeld(null);
          update((t) => notice(t, said("The session was resumed."), "info"));
          return;
        case GATEWAY_NOTIFICATIONS.modeChangeWaiting:
          update((t) => modeChangeWaiting(t, m.params));
          return;
        case GATEWAY_NOTIFICATIONS.modeChangeDecided:
          update((t) => modeChangeDecided(t, m.params));
          return;
        case GATEWAY_NOTIFICATIONS.agentModeChanged:
          // The agent is in a mode where it may ask fewer questions (decision 0061): said in the transcript and the header.
          setModes((prev) => agentModeChanged(prev, m.params));
          update((t) => notice(t, said("The agent switched to a governed mode."), "warn"));
          return;
        case GATEWAY_NOTIFICATIONS.rulesUnavailable:
          // A request reached people without the tenant's rules: say so beside it (README, "Permission requests").
          update((t) => notice(t, said("The rules could not be consulted."), "warn"));
          return;
        case GATEWAY_NOTIFICATIONS.turnEnded:
          setTurn("idle");
          update((t) => turnEnded(t, said("The gateway ended the turn.")));
          return;
        default:
          // A request this console does not serve (file system, terminals) gets a clear error.
          if (m.id !== undefined)
            link.client.respondError(m.id, { code: ErrorCode.methodNotFound, message: `${m.method} is not supported by the web console` });
      }
    };
    // Attaches the session: its history is replayed from the start, so a reconnect starts the transcript afresh (no duplicates).
    const load = () =>
      link.client
        .request("session/load", { sessionId: session.id, cwd: session.cwd, mcpServers: [] })
        .then(() => api.get<Snapshot>(`/v1/sessions/${encodeURIComponent(session.id)}`))
        .then((snapshot) => {
          setTurn(snapshot.turn.state);
          setModes(snapshot.modes ?? null);
          if (snapshot.title) setTitle(snapshot.title);
          // Replayed tool calls still pending when no turn is running will never finish.
          if (snapshot.turn.state === "idle") update((t) => turnEnded(t, null));
        })
        .catch((e: unknown) => update((t) => notice(t, `Could not load the session: ${errorText(e)}`, "warn")));
    link.listen({
      onMessage,
      onState: setLinkState,
      onReconnected: () => {
        myTurn.current = false;
        myPrompts.current = 0;
        setT(EMPTY);
        void load();
      },
    });
    if (!isNew) void load();
    return () => link.close();
  }, [link, session.id]);

  // Someone else's turn ends with no message to this connection: the snapshot says when it has.
  useEffect(() => {
    if (turn === "idle" || myTurn.current) return;
    const timer = setInterval(() => {
      api
        .get<Snapshot>(`/v1/sessions/${encodeURIComponent(session.id)}`)
        .then((snapshot) => {
          if (!myTurn.current) setTurn(snapshot.turn.state);
        })
        .catch(() => undefined);
    }, TURN_POLL_MS);
    return () => clearInterval(timer);
  }, [turn, session.id, mineAnswered]);

  const bottom = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const box = bottom.current?.parentElement;
    if (box && box.scrollHeight - box.scrollTop - box.clientHeight < 160) bottom.current?.scrollIntoView({ block: "end" });
  }, [t]);

  /** A prompt now joins the running turn: the agent's served capabilities advertise prompt queueing (decision 0067). */
  const joins = link.queuesPrompts && turn === "running";

  const send = (event: Event) => {
    event.preventDefault();
    const prompt = text.trim();
    if (!prompt || !(turn === "idle" || joins) || !link.isOpen) return;
    setText("");
    setRefused(null);
    setTurn("running");
    myTurn.current = true;
    myPrompts.current += 1;
    update((t) => userMessage(t, prompt, null));
    // Named by its first prompt, as the gateway names it (protocol/session-title.ts): the header says so at once.
    if (typeof title !== "string") setTitle(titleFromPrompt([{ type: "text", text: prompt }]));
    promptBox.current?.focus();
    link.client
      .request<{ stopReason?: string }>("session/prompt", { sessionId: session.id, prompt: [{ type: "text", text: prompt }] })
      .then((r) => {
        if (r.stopReason === "cancelled") update((t) => turnEnded(t, "The turn was cancelled."));
        else if (r.stopReason && r.stopReason !== "end_turn") update((t) => notice(t, `The turn ended: ${r.stopReason}.`, "warn"));
      })
      .catch((e: unknown) => {
        const refusal = promptRefusal(e);
        if (refusal === null) return update((t) => turnEnded(t, `The prompt failed: ${errorText(e)}`));
        // Never run: the turn goes on as it was, and the words are back in the box to send again.
        setRefused(refusal);
        update((t) => notice(t, refusal, "warn"));
        setText((now) => (now.trim() === "" ? prompt : now));
      })
      .finally(() => {
        myPrompts.current -= 1;
        if (myPrompts.current > 0) return; // another prompt of this page is still in the turn
        myTurn.current = false;
        setMineAnswered((n) => n + 1);
        // A turn the agent queues prompts in ends with its last prompt, which may be someone else's: the snapshot says.
        if (!link.queuesPrompts) setTurn("idle");
        // The gateway names an untitled session by its first prompt (the list shows it): show it here too.
        api
          .get<Snapshot>(`/v1/sessions/${encodeURIComponent(session.id)}`)
          .then((snapshot) => {
            if (snapshot.title) setTitle(snapshot.title);
            if (link.queuesPrompts && !myTurn.current) setTurn(snapshot.turn.state);
          })
          .catch(() => {
            if (link.queuesPrompts && !myTurn.current) setTurn("idle");
          });
      });
  };

  const cancel = () => {
    setTurn("cancelling");
    link.client.notify("session/cancel", { sessionId: session.id });
    promptBox.current?.focus(); // the Cancel button is disabled now
  };

  const modeWaiting = modeChangesWaiting(t);
  const waiting = pendingCount(t) + modeWaiting;
  const modeText = currentModeText(modes);

  /** A person's decision on a held mode change; a refusal by the gateway (not theirs to make, already decided) is shown on the card. */
  const decideModeChange = (proposalId: string, decision: "approve" | "refuse") => {
    if (!link.isOpen) {
      update((t) =>
        modeChangeDecision(
          t,
          proposalId,
          "Not connected to the gateway: the decision was not sent. Try again once the connection is back.",
        ),
      );
      return;
    }
    update((t) => modeChangeDecision(t, proposalId, null));
    focusAfterAnswer.current = true;
    link.client
      .request(DECIDE_MODE_CHANGE, { sessionId: session.id, proposalId, decision })
      .catch((e: unknown) => update((t) => modeChangeDecision(t, proposalId, errorText(e))));
  };
  const answer = (key: string, requestId: number | string, optionId: string, reason: string, accepted: number[]) => {
    if (!link.isOpen) {
      update((t) =>
        notice(t, "Not connected to the gateway: the answer was not sent. It waits for you once the connection is back.", "warn"),
      );
      return;
    }
    // The reason rides in the gateway's namespace (decision 0048), and what the card showed of the
    // unseen changes and what the person accepted of them (decisions 0064, 0068); the outcome is the option alone.
    const why = reason.trim();
    const shown = shownClaim(t.permissions[key]?.unseen, accepted);
    const gateway = { ...(why ? { reason: why } : {}), ...(shown ? { shown } : {}) };
    link.client.respond(requestId, {
      outcome: { outcome: "selected", optionId },
      ...(why || shown ? { _meta: { acpGateway: gateway } } : {}),
    });
    focusAfterAnswer.current = true;
    update((t) => permissionAnswered(t, key));
  };

  return (
    <article class="session" aria-labelledby="session-title" ref={article}>
      <header class="session-head">
        <button class="quiet back" onClick={onBack} aria-label="Back to the sessions">
          ← Sessions
        </button>
        <div class="session-id">
          <h2 id="session-title" tabIndex={-1} ref={heading}>
            {typeof title === "string" ? <Safe text={title} /> : "Untitled session"}
          </h2>
          <p class="muted">
            <span class="badge">
              <Safe text={session.agent} />
            </span>{" "}
            <code class="path">
              <Safe text={session.cwd} />
            </code>{" "}
            <span class={`badge turn-${turn}`}>{turn === "idle" ? "idle" : turn === "running" ? "● running" : "cancelling"}</span>
            {modeText !== null && (
              <>
                {" "}
                <span
                  class={`badge mode ${modes?.currentGoverned ? "governed" : ""}`}
                  title={modes?.currentGoverned ? "A governed mode: the agent may ask fewer permission questions in it." : undefined}
                >
                  Mode: <Safe text={modeText} />
                  {modes?.currentGoverned ? " · governed" : ""}
                </span>
              </>
            )}
          </p>
        </div>
      </header>
      {!link.agentConnected && <p class="warn">Agent “{link.agent}” is offline: prompts will fail until it connects.</p>}
      <LinkStatus state={linkState} />
      {waiting > 0 && (
        <p class="attention-bar" role="status">
          <button class="link" onClick={() => focusFirstWaiting()} aria-keyshortcuts={ANSWER_SHORTCUT.aria}>
            {waiting} {modeWaiting > 0 ? "request" : "permission request"}
            {waiting > 1 ? "s" : ""} waiting for an answer ↓
          </button>{" "}
          <kbd class="muted">{ANSWER_SHORTCUT.label}</kbd>
        </p>
      )}
      <div class="transcript" aria-live="polite">
        {t.plan && t.plan.length > 0 && <PlanView entries={t.plan} />}
        {t.items.map((item, i) => {
          switch (item.type) {
            case "message":
              return (
                <div key={i} class={`msg ${item.role}`}>
                  <span class="who">{item.role === "agent" ? "Agent" : <Safe text={authorOf(item, me)} />}</span>
                  {item.role === "agent" ? (
                    <Markdown text={item.text} />
                  ) : (
                    <p class="plain">
                      <Safe text={item.text} multiline />
                    </p>
                  )}
                </div>
              );
            case "thought":
              return (
                <details key={i} class="thought">
                  <summary>Agent's thoughts</summary>
                  <Markdown text={item.text} />
                </details>
              );
            case "tool": {
              const call = t.tools[item.toolCallId];
              const p = t.permissions[`tool:${item.toolCallId}`];
              return call ? (
                <ToolCard key={item.toolCallId} call={call}>
                  {p ? (
                    <PermissionCard
                      api={api}
                      permission={p}
                      session={session}
                      me={me}
                      tools={t.tools}
                      onAnswer={(optionId, reason, accepted) => answer(p.key, p.requestId, optionId, reason, accepted)}
                    />
                  ) : null}
                </ToolCard>
              ) : null;
            }
            case "permission": {
              // A request for a tool call already on screen is shown inside its card.
              const p = t.permissions[item.key];
              const inCard = p && p.key.startsWith("tool:") && t.tools[p.key.slice(5)] !== undefined;
              return p && !inCard ? (
                <PermissionCard
                  key={item.key}
                  api={api}
                  permission={p}
                  session={session}
                  me={me}
                  tools={t.tools}
                  onAnswer={(optionId, reason, accepted) => answer(p.key, p.requestId, optionId, reason, accepted)}
                />
              ) : null;
            }
            case "mode_change": {
              const change = t.modeChanges[item.proposalId];
              return change ? (
                <ModeChangeCard
                  key={item.proposalId}
                  change={change}
                  me={decider}
                  onDecide={(decision) => decideModeChange(change.proposalId, decision)}
                />
              ) : null;
            }
            case "notice":
              return (
                <p key={i} class={`notice ${item.tone}`}>
                  <Safe text={item.text} />
                </p>
              );
          }
        })}
        <div ref={bottom} />
      </div>
      {held !== null && (
        <div class="held" role="status">
          <p>
            <Safe text={held} />
          </p>
          <button type="button" onClick={resume}>
            Resume session
          </button>
          {resumeError && (
            <p class="error" role="alert">
              {resumeError}
            </p>
          )}
        </div>
      )}
      <form class="prompt-bar" onSubmit={send}>
        {joins && (
          <p class="prompt-hint muted" id="prompt-joins">
            The agent is working: a prompt you send now joins its running turn.
          </p>
        )}
        {refused !== null && (
          <p class="prompt-hint error" role="alert">
            <Safe text={refused} />
          </p>
        )}
        <label class="sr-only" for="prompt-text">
          Prompt
        </label>
        <textarea
          ref={promptBox}
          id="prompt-text"
          rows={2}
          placeholder={turn === "idle" ? "Ask the agent…" : joins ? "Add to what the agent is working on…" : "The agent is working…"}
          aria-describedby={joins ? "prompt-joins" : undefined}
          value={text}
          onInput={(e) => setText((e.currentTarget as HTMLTextAreaElement).value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) send(e);
          }}
        />
        <div class="prompt-actions">
          <button
            class="primary"
            disabled={!(turn === "idle" || joins) || !text.trim() || linkState.state !== "open"}
            aria-describedby={joins ? "prompt-joins" : undefined}
          >
            Send
          </button>
          <button type="button" class="danger" onClick={cancel} disabled={turn !== "running" || linkState.state !== "open"}>
            Cancel turn
          </button>
        </div>
      </form>
    </article>
  );
}

/** The connection's state where the person is looking: above the transcript, announced when it changes. */
function LinkStatus({ state }: { state: LinkState }) {
  if (state.state === "open") return null;
  if (state.state === "closed")
    return (
      <p class="error" role="alert">
        Disconnected from the gateway: {state.why} Open the session again to reconnect.
      </p>
    );
  const seconds = Math.max(1, Math.round((state.retryAt - Date.now()) / 1000));
  return (
    <p class="warn" role="status" tabIndex={0} id="link-status">
      The connection to the gateway was lost. Reconnecting (attempt {state.attempt}, in about {seconds} s)… Prompts wait until it is back.
    </p>
  );
}
