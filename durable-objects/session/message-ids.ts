// The agent's message ids (the Message ID RFD: `messageId` on message chunks, made by the agent,
// opaque) as the session's log holds them, for PR #533's `after_message` and `turn_complete`
// (decision 0060). The log keeps them: chunks merge only within one message (compaction.ts).

import type { HistoryPolicy } from "../../protocol/session-attach";

/** The log's last entry of message `messageId` (its chunks may span several), or undefined when the log has none. */
function lastSeqOf(sql: SqlStorage, messageId: string): number | undefined {
  const row = sql
    .exec<{ seq: number | null }>(
      "SELECT max(seq) AS seq FROM log WHERE kind = 'update' AND json_extract(body, '$.params.update.messageId') = ?",
      messageId,
    )
    .one();
  return row.seq ?? undefined;
}

/**
 * What an attach is served: `after_message` replays the log after the message's last entry, and is
 * `full` (said so in the answer, as the PR says) when the log does not have the message.
 */
export function servedHistory(
  sql: SqlStorage,
  asked: HistoryPolicy,
  afterMessageId: string | undefined,
): { policy: HistoryPolicy; afterSeq: number } {
  if (asked !== "after_message") return { policy: asked, afterSeq: 0 };
  const seq = afterMessageId === undefined ? undefined : lastSeqOf(sql, afterMessageId);
  return seq === undefined ? { policy: "full", afterSeq: 0 } : { policy: "after_message", afterSeq: seq };
}

/** The agent's last message of the turn that started after log entry `fromSeq`, when it named it. */
export function lastAgentMessageId(sql: SqlStorage, fromSeq: number): string | undefined {
  const row = sql
    .exec<{ id: SqlStorageValue }>(
      "SELECT json_extract(body, '$.params.update.messageId') AS id FROM log WHERE seq > ? AND kind = 'update' AND json_extract(body, '$.params.update.sessionUpdate') = 'agent_message_chunk' AND json_extract(body, '$.params.update.messageId') IS NOT NULL ORDER BY seq DESC LIMIT 1",
      fromSeq,
    )
    .toArray()[0];
  return typeof row?.id === "string" ? row.id : undefined;
}
