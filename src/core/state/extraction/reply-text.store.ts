import { sql, type Sql } from '../../../storage/database.js';

/** The bodies of up to `limit` messages still waiting for their reply text, row-locked (others skip them). */
export async function pendingReplyTexts(
  trx: Sql,
  limit: number,
): Promise<{ id: string; body_text: string | null; body_html: string | null }[]> {
  return (
    await sql<{ id: string; body_text: string | null; body_html: string | null }>`
      select id, body_text, body_html from message
      where extracted is not null and not (extracted ? 'replyText')
      order by id limit ${limit} for update skip locked`.execute(trx)
  ).rows;
}

/** Stores each message's reply text into its extraction, in one statement. */
export async function storeReplyTexts(trx: Sql, ids: readonly string[], texts: readonly string[]): Promise<void> {
  await sql`update message set extracted = message.extracted || jsonb_build_object('replyText', x.reply_text)
    from unnest(${[...ids]}::text[], ${[...texts]}::text[]) as x(id, reply_text) where message.id = x.id`.execute(trx);
}
