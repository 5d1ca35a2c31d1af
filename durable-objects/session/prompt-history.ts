// The prompts in the session's log, for PR #533's `{type: "prompt"}` history items in the attach answer
// (decision 0063). A prompt is logged as the echo the other clients get (session-info.ts
// `recordPrompt`): one `user_message_chunk` row per content block, marked `_meta.acpGateway.synthesized`
// (a mark no agent can send, protocol/gateway-namespace.ts), appended together; consecutive text
// blocks of one prompt may be merged into one row (compaction.ts).

import type { LoggedPrompt } from "../../protocol/session-attach";

interface EchoRow {
  seq: number;
  at: number;
  conn: string | null;
  content: string | null;
}

/** The prompts logged after entry `afterSeq`, oldest first, at most the newest `limit`: rows of one prompt share its time and connection, one after another. */
export function promptsInLog(sql: SqlStorage, afterSeq: number, limit: number): LoggedPrompt[] {
  const rows = sql
    .exec<EchoRow & Record<string, SqlStorageValue>>(
      `SELECT seq, at, json_extract(body, '$.params._meta.acpGateway.connectionId') AS conn,
              json_extract(body, '$.params.update.content') AS content
         FROM log
        WHERE seq > ? AND kind = 'update'
          AND json_extract(body, '$.params.update.sessionUpdate') = 'user_message_chunk'
          AND json_extract(body, '$.params._meta.acpGateway.synthesized') = 1
        ORDER BY seq`,
      afterSeq,
    )
    .toArray();
  const prompts: (LoggedPrompt & { conn: string | null; lastSeq: number })[] = [];
  for (const row of rows) {
    const block: unknown = row.content === null ? null : JSON.parse(row.content);
    const last = prompts.at(-1);
    if (last && last.lastSeq === row.seq - 1 && last.at === row.at && last.conn === row.conn) {
      last.blocks.push(block);
      last.lastSeq = row.seq;
    } else prompts.push({ blocks: [block], at: row.at, conn: row.conn, lastSeq: row.seq });
  }
  return prompts.slice(-limit).map(({ blocks, at }) => ({ blocks, at }));
}
