import { sql } from '../../../storage/database.js';
import type { Visibility } from '../../access/principal.js';
import { SUMMARY_COLUMNS, visible, type PagePosition, type SummaryRow } from '../messages/message.store.js';
import type { SearchQuery } from './search-query.js';

const tsquery = (t: { text: string; phrase: boolean }) =>
  t.phrase
    ? sql`phraseto_tsquery('simple'::regconfig, ${t.text})`
    : sql`plainto_tsquery('simple'::regconfig, ${t.text})`;

/**
 * One keyset page of search matches, newest first, in the mailbox the caller resolved, under the
 * same visibility predicate as every other read. Words and subject terms go through the GIN index
 * (message_search_idx); subject: is then re-checked on the subject alone. from:/to: are substring
 * filters on the candidate rows.
 */
export function searchPageQuery(
  v: Visibility,
  mailboxId: string,
  q: SearchQuery,
  after: PagePosition | null,
  limit: number,
) {
  const words = [...q.terms, ...q.subject];
  // Held mail is never a match (docs/screening.md).
  const conditions = [
    sql`m.mailbox_id = ${mailboxId}`,
    sql`m.deleted_at is null`,
    sql`not m.screening_held`,
    visible(v),
  ];
  if (words.length > 0) {
    const all = words.map(tsquery).reduce((a, b) => sql`${a} && ${b}`);
    conditions.push(sql`m.search_vector @@ (${all})`);
  }
  for (const s of q.subject) conditions.push(sql`to_tsvector('simple'::regconfig, m.subject) @@ ${tsquery(s)}`);
  for (const f of q.from)
    conditions.push(sql`(strpos(lower(m.from_address), ${f}) > 0 or strpos(lower(m.from_display_name), ${f}) > 0)`);
  for (const t of q.to)
    conditions.push(
      sql`exists (select 1 from unnest(m.to_addresses || m.cc_addresses) a where strpos(lower(a), ${t}) > 0)`,
    );
  if (q.hasAttachment) conditions.push(sql`m.attachment_count > 0`);
  if (q.isRead !== null) conditions.push(sql`m.is_read = ${q.isRead}`);
  if (q.before) conditions.push(sql`m.created_at < ${q.before}::timestamptz`);
  if (q.after) conditions.push(sql`m.created_at >= ${q.after}::timestamptz`);
  if (q.direction) conditions.push(sql`m.direction = ${q.direction}`);
  if (after) conditions.push(sql`(m.created_at, m.id) < (${new Date(after.t)}::timestamptz, ${after.i}::varchar)`);
  const where = conditions.reduce((a, b) => sql`${a} and ${b}`);
  if (words.length === 0)
    return sql<SummaryRow>`select ${SUMMARY_COLUMNS} from message m join mailbox mb on mb.id = m.mailbox_id
      where ${where}
      order by m.created_at desc, m.id desc
      limit ${limit}`;
  // With words, one statement picks between two plans at run time, because the planner cannot:
  // the statistics of a tsvector give a word outside its most-common list a guessed frequency
  // (half the least common one's), so for a rare word it walks the mailbox newest first expecting
  // a page soon, and reads all of it (bench/http: 6.5 s at 1 000 000 messages). `hits` takes at
  // most SEARCH_DIRECT_MATCHES matches in any order (the GIN index for a rare word); if that is all
  // of them, the page is the newest of those; otherwise the matches are dense enough (at least
  // SEARCH_DIRECT_MATCHES in the mailbox) that the walk newest first finds a page soon. The
  // branch not taken is skipped by its one-time filter (docs/api.md, "Search").
  return sql<SummaryRow>`with hits as materialized (
      select m.id, m.created_at from message m join mailbox mb on mb.id = m.mailbox_id
      where ${where}
      limit ${SEARCH_DIRECT_MATCHES}
    ), few as materialized (select count(*) < ${SEARCH_DIRECT_MATCHES} as yes from hits)
    (select ${SUMMARY_COLUMNS} from message m
      where m.id in (select h.id from hits h order by h.created_at desc, h.id desc limit ${limit})
        and (select yes from few))
    union all
    (select ${SUMMARY_COLUMNS} from message m join mailbox mb on mb.id = m.mailbox_id
      where ${where} and not (select yes from few)
      order by m.created_at desc, m.id desc
      limit ${limit})
    order by created_at desc, id desc
    limit ${limit}`;
}

/** At most this many matches are fetched through the word index before the newest-first walk takes over. */
export const SEARCH_DIRECT_MATCHES = 2_000;
