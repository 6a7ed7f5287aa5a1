import { sql, type Database } from '../../../storage/database.js';

/** The stored vector of a message row (the SQL function of migration 20270201000000). */
const VECTOR = sql`message_search_vector(subject, body_text, body_html)`;

/** Messages one background pass indexes per statement. */
export const SEARCH_INDEX_BATCH = 200;

/**
 * Fills message.search_vector after the message is stored, off the intake's hot path (to_tsvector
 * of the body and its GIN entries were the largest cost of storing a message). Two callers: the
 * worker's background pass for every mailbox, and a search, which first indexes what of its own
 * mailbox is still waiting, so a search never misses stored mail (docs/api.md, "Search").
 */
export class SearchIndex {
  constructor(private readonly db: Database) {}

  /**
   * Indexes every waiting message of one mailbox, in id order so that concurrent searches lock
   * rows in the same order; a row the background pass holds is waited for, then found indexed.
   */
  async catchUp(mailboxId: string): Promise<number> {
    const result = await sql`update message set search_vector = ${VECTOR}
      where id in (select id from message where mailbox_id = ${mailboxId} and search_vector is null
        order by id for update)`.execute(this.db.db);
    return Number(result.numAffectedRows ?? 0);
  }

  /** Indexes up to `limit` waiting messages of any mailbox; rows another pass or search holds are skipped. */
  async indexSome(limit = SEARCH_INDEX_BATCH): Promise<number> {
    const result = await sql`update message set search_vector = ${VECTOR}
      where id in (select id from message where search_vector is null limit ${limit} for update skip locked)`.execute(
      this.db.db,
    );
    return Number(result.numAffectedRows ?? 0);
  }
}
