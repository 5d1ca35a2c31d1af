// What the held mode changes keep (decision 0061): the proposals in the session object's SQLite, and the
// audit row a decision writes to D1 (its tenant carried in the row: a deletion's is written after the
// session forgot its meta). mode-approvals.ts decides and tells; this file stores and records.

import type { TenantSettings } from "../../core/principal";
import { type AuditEntry, insertAuditRows } from "../../db/queries/audit";
import { appendToChain } from "../../db/queries/audit-chain";
import { tenantById } from "../../db/queries/tenants";
import type { ModeDecider, ModeProposal } from "../../protocol/people/mode-approval";
import type { JsonRpcId } from "../../protocol/jsonrpc";
import type { ClientAttachment } from "../../protocol/session-wire";
import type { SessionMeta } from "./store-meta";

export /** A held change as stored: the proposal, who asked (to answer them) and the request to relay once approved. */
interface Held {
  proposal: ModeProposal;
  client: ClientAttachment;
  requestId: JsonRpcId;
  method: string;
  params: unknown;
}

export /** Who decides, as the edge or the client's attachment names them. */
interface ModeDecisionBy {
  role: ModeDecider["role"];
  keyId: string;
  person?: { issuer: string; subject: string };
  label: string | null;
  connId: string | null;
}

/** The held changes in the object's SQLite (table `mode_proposals`, store-migrations.ts): they survive eviction. */
export class ModeProposalTable {
  /**
   * Known to hold nothing: `count` and `dueAt` answer without reading, as they are asked every time the
   * session's alarm is (twice a client-answered request, issue 40). Only an insert clears it.
   */
  private empty = false;

  constructor(private readonly sql: SqlStorage) {}

  add(held: Held): void {
    this.empty = false;
    this.sql.exec(
      "INSERT INTO mode_proposals (id, expires_at, body) VALUES (?, ?, ?)",
      held.proposal.id,
      held.proposal.expiresAt,
      JSON.stringify(held),
    );
  }

  count(): number {
    if (this.empty) return 0;
    const n = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM mode_proposals").one().n;
    this.empty = n === 0;
    return n;
  }

  dueAt(): number | undefined {
    if (this.empty) return undefined;
    const at = this.sql.exec<{ at: number | null }>("SELECT MIN(expires_at) AS at FROM mode_proposals").toArray()[0]?.at ?? undefined;
    this.empty = at === undefined;
    return at;
  }

  all(): Held[] {
    return this.sql
      .exec<{ body: string }>("SELECT body FROM mode_proposals ORDER BY expires_at")
      .toArray()
      .map((r) => JSON.parse(r.body) as Held);
  }

  /** Takes a proposal out (null: none, or already taken by a decision in progress). */
  take(id: string): Held | null {
    const row = this.sql.exec<{ body: string }>("DELETE FROM mode_proposals WHERE id = ? RETURNING body", id).toArray()[0];
    return row ? (JSON.parse(row.body) as Held) : null;
  }

  put(held: Held): void {
    this.empty = false;
    this.sql.exec(
      "INSERT OR REPLACE INTO mode_proposals (id, expires_at, body) VALUES (?, ?, ?)",
      held.proposal.id,
      held.proposal.expiresAt,
      JSON.stringify(held),
    );
  }
}

export function modeAuditRow(
  meta: SessionMeta | undefined,
  held: Held,
  by: ModeDecisionBy | null,
  outcome: AuditEntry["outcome"],
  reason: string | null,
): AuditEntry {
  return {
    id: crypto.randomUUID(),
    tenantId: meta?.tenantId ?? "",
    sessionId: meta?.sessionId ?? "",
    agent: meta?.agent ?? "",
    kind: "mode",
    name: held.proposal.change.setting,
    operation: held.proposal.operation,
    outcome,
    decidedBy: by ? "person" : "deadline",
    decidedByKey: by?.keyId ?? null,
    decidedByUser: by?.label ?? null,
    decidedByIssuer: by?.person?.issuer ?? null,
    decidedBySubject: by?.person?.subject ?? null,
    decidedByRole: by?.role ?? null,
    decidedByConnection: by?.connId ?? null,
    policy: "modes:four_eyes",
    reason: reason ?? `proposed by ${held.proposal.proposer.label ?? held.proposal.proposer.who}`,
    at: Date.now(),
  };
}

/** The rows carry their tenant: a deletion's are written after the session forgot its meta. */
export async function writeModeAudit(db: D1Database, rows: AuditEntry[]): Promise<void> {
  const tenantId = rows[0]?.tenantId;
  if (!tenantId) return;
  await insertAuditRows(db, rows);
  await appendToChain(db, tenantId, rows);
}

/** Whether the tenant lets keys naming no person approve (`fourEyes.keysApprove`); unreadable is no. */
export async function tenantLetsKeysApprove(db: D1Database, tenantId: string | undefined): Promise<boolean> {
  if (!tenantId) return false;
  try {
    const tenant = await tenantById(db, tenantId);
    const settings = tenant ? (JSON.parse(tenant.settings) as TenantSettings) : undefined;
    return settings?.fourEyes?.keysApprove === true;
  } catch {
    return false; // closed world: a key counts as nobody when the setting cannot be read
  }
}
