/** @jsxImportSource hono/jsx */
// GET/POST /approve/:token — the approval page a notification links to. No API key: the token is
// the capability, signed by the gateway (APPROVAL_LINK_SECRET), bound to one tenant, session and
// request, short-lived, and single-use (the session records each link and marks it used). It
// reaches nothing but that request's view and its answer. Without the secret, nothing is accepted.

import { tenantDisabled } from "../../db/queries/tenants";
import { Hono } from "hono";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ApprovalView, LinkRefusal } from "../../durable-objects/session/contract";
import { type ApprovalClaims, verifyApprovalToken } from "../../protocol/approval-token";
import { readReason } from "../../protocol/answer-reason";
import type { AppEnv } from "../types";
import { approvalPage, messagePage } from "./approve-page";
import { objects } from "../../durable-objects/objects";

export const approveRoutes = new Hono<AppEnv>();

approveRoutes.get("/approve/:token", async (c) => {
  const claims = await checkedClaims(c);
  if (claims instanceof Response) return claims;
  const view = await session(c, claims).approvalView(claims.p, claims.l);
  if (view.state === "pending") return html(c, 200, approvalPage(view));
  return explain(c, view);
});

approveRoutes.post("/approve/:token", async (c) => {
  const claims = await checkedClaims(c);
  if (claims instanceof Response) return claims;
  const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
  const optionId = form.optionId;
  if (typeof optionId !== "string" || optionId === "") return html(c, 400, messagePage("No answer chosen", ["Choose one of the answers."]));
  const reason = readReason(typeof form.reason === "string" ? form.reason : undefined);
  if (!reason.ok) return html(c, 400, messagePage("The reason is too long", [`Nothing was answered: ${reason.why}.`]));
  const result = await session(c, claims).answerFromLink(claims.p, claims.l, optionId, reason.reason);
  if (result.state === "answered_by_you") {
    return html(c, 200, messagePage("Answered", ["Your answer was sent to the agent. Every other copy of the request was withdrawn."]));
  }
  if (result.state === "answered") return explain(c, result, 409);
  if (result.state === "invalid_option") {
    const view = await session(c, claims).approvalView(claims.p, claims.l);
    if (view.state === "pending") return html(c, 400, approvalPage(view, `“${optionId}” is not one of the answers this page offers.`));
  }
  return explain(c, result);
});

async function checkedClaims(c: Context<AppEnv>): Promise<ApprovalClaims | Response> {
  const check = await verifyApprovalToken(c.env.APPROVAL_LINK_SECRET, c.req.param("token") ?? "");
  if (!check.ok) {
    if (check.reason === "no_secret") {
      console.error("approve: APPROVAL_LINK_SECRET is unset or shorter than 32 characters; refusing every approval link");
      return html(c, 503, messagePage("Approval links are turned off", ["This gateway has no approval-link secret configured."]));
    }
    if (check.reason === "expired") {
      return html(c, 410, messagePage("This link has expired", ["Open the console or an editor to see whether the request still waits."]));
    }
    return html(c, 404, messagePage("Not a valid approval link", ["Check that the whole link was copied."]));
  }
  // The token is the gateway's own signature, so the team existed when the link was sent: if it is
  // gone or disabled now, the link is withdrawn with it.
  const disabled = await tenantDisabled(c.env.DB, check.claims.t);
  if (disabled === undefined || disabled) {
    return html(
      c,
      410,
      messagePage("This approval link was withdrawn", [
        disabled ? "Its team was disabled." : "Its team no longer exists.",
        "Nothing can be answered through it; ask the team's admin.",
      ]),
    );
  }
  return check.claims;
}

/** The session's two link calls, typed as the object declares them. */
function session(c: Context<AppEnv>, claims: ApprovalClaims) {
  const stub = objects.session(c.env, claims.t, claims.s);
  return {
    // SAFETY: the views are plain JSON data (rawInput and decidedBy are JSON the session parsed), which RPC
    // structured-clones as is; its generated stub type drops union members holding `unknown`.
    approvalView: (permId: number, linkId: string) => stub.approvalView(permId, linkId) as Promise<ApprovalView>,
    answerFromLink: (permId: number, linkId: string, optionId: string, reason: string | null) =>
      stub.answerFromLink(permId, linkId, optionId, reason) as Promise<LinkRefusal | { state: "answered_by_you" }>,
  };
}

function explain(c: Context<AppEnv>, view: LinkRefusal, answeredStatus: ContentfulStatusCode = 410) {
  switch (view.state) {
    case "used":
      return html(
        c,
        410,
        messagePage("This link was already used", [
          `It answered “${view.option ?? "?"}” at ${new Date(view.usedAt).toISOString()}. A link answers once.`,
        ]),
      );
    case "expired":
      return html(c, 410, messagePage("This link has expired", ["Open the console or an editor to see whether the request still waits."]));
    case "answered":
      return html(c, answeredStatus, messagePage("Already answered", [describeResolution(view.decidedBy, view.outcome)]));
    case "invalid_option":
      return html(c, 400, messagePage("Not an answer this page offers", [`It offers: ${view.offered.join(", ") || "nothing"}.`]));
    case "withdrawn":
      return html(
        c,
        410,
        messagePage("This approval link was withdrawn", [
          view.reason === "target_deleted"
            ? "Its notification target was deleted, and with it every link sent through it."
            : "Its session was deleted.",
          "Open the console or an editor to see whether anything still waits.",
        ]),
      );
    case "unknown":
      return html(c, 404, messagePage("Not a valid approval link", ["This link names no request the gateway knows."]));
  }
}

function describeResolution(decidedBy: unknown, outcome: unknown): string {
  const by = decidedBy as { type?: string; user?: string | null; target?: string; description?: string } | null;
  const chosen = (outcome as { outcome?: string; optionId?: string } | null)?.optionId;
  const what = chosen ? ` (“${chosen}”)` : "";
  switch (by?.type) {
    case "person":
      return `${by.user ?? "Someone"} answered it from a client${what}.`;
    case "link":
      return `It was answered through another approval link, sent to “${by.target ?? "?"}”${what}.`;
    case "rule":
      return `A remembered rule answered it${what}: ${by.description ?? ""}`;
    case "deadline":
      return "Nobody answered before its deadline; the gateway cancelled the turn.";
    case undefined:
      return "The request is no longer waiting.";
    default:
      return `The request is no longer waiting (${by?.type ?? "?"}).`;
  }
}

function html(c: Context<AppEnv>, status: ContentfulStatusCode, page: ReturnType<typeof messagePage>) {
  c.header("Cache-Control", "no-store");
  c.header("Referrer-Policy", "no-referrer");
  c.header("X-Frame-Options", "DENY");
  c.header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
  return c.html(page, status);
}
