import { setPriority } from 'node:os';
import { snippetOf } from '../../src/core/state/messages/snippet.js';
import pg from 'pg';

// Word pools for realistic, varied mail text. Picks are arithmetic on the row number (no random()),
// so a seeded mailbox is the same on every run and the search words' hit rates are known.
const SUBJECTS = [
  'Your order has shipped',
  'Meeting notes from Tuesday',
  'Invoice for last month',
  'Re: project timeline',
  'Welcome to the team',
  'Password reset request',
  'Weekly digest',
  'Fwd: contract draft',
  'Lunch on Friday?',
  'Security alert for your account',
  'Flight itinerary changed',
  'Your subscription renews soon',
  'Re: budget review',
  'New comment on your pull request',
  'Delivery attempt failed',
  'Reminder: dentist appointment',
  'Quote for the kitchen renovation',
  'Re: conference travel',
  'Receipt from the hardware store',
  'Shared document: roadmap',
];
const SENTENCES = [
  'Thanks for getting back to me so quickly.',
  'Please find the attached document for your review.',
  'Let me know if the new schedule works for everyone on the team.',
  'The package left our warehouse this morning and should arrive within three days.',
  'We noticed a sign-in from a new device near Berlin.',
  'Could we move the call to Thursday afternoon instead?',
  'The invoice total includes shipping and the extended warranty.',
  'I have added my comments to the second section of the proposal.',
  'Your payment was received and your account is up to date.',
  'Our engineers deployed the fix to production last night.',
  'Remember to bring the signed forms to the front desk.',
  'The hotel confirmed the booking for two nights in Lisbon.',
  'Attached are the slides from yesterday’s workshop.',
  'We are updating our privacy policy; no action is needed.',
  'The train leaves at 7:40 from platform nine.',
  'Can you double-check the numbers in the spreadsheet before Monday?',
  'The landlord will fix the heating on Wednesday between nine and noon.',
  'Here is the summary of the customer feedback we collected.',
  'If you did not request this change, contact support right away.',
  'Happy birthday! Hope you have a wonderful day.',
  'The library books are due back next week.',
  'Our team will be offline during the holiday weekend.',
  'The draft looks good overall, just a few typos on page four.',
  'Kindly confirm receipt of this message.',
  'We shipped version 2.3 with faster search and fewer crashes.',
  'Please review the pull request when you have a moment.',
  'The gardener suggested planting tulips along the fence.',
  'Tickets for the concert go on sale Friday at ten.',
  'Sorry for the late reply, I was travelling all week.',
  'The warranty covers parts and labour for two years.',
  'Your tax documents are ready to download.',
];
const NAMES = ['Alice', 'Bob', 'Chen', 'Dana', 'Emeka', 'Fatima', 'Gustav', 'Hiro', 'Ines', 'Jonas', 'Kofi', 'Lena'];

/** Words whose hit rates the search bench relies on (see searchWords). */
export const SEARCH_COMMON_WORD = 'quarterly'; // one message in 100
export const SEARCH_COMMON_EVERY = 100;
/** The unique reference word of message number g: one hit in the whole mailbox. */
export const rareWord = (g: number) => `ref${g}x`;
/** The sender of message number g (97 senders: about 1 % each). */
export const senderOf = (g: number) => `sender${g % 97}@remote.test`;

const pool = (words: string[]) => `array[${words.map((w) => `'${w.replace(/'/g, "''")}'`).join(', ')}]::text[]`;

/** One mailbox to fill: `count` messages numbered 1..count (newest first). */
export interface SeedTarget {
  mailboxId: string;
  address: string;
  count: number;
}

/** Options of seedBulk: rows per statement, a progress callback, a CPU-politeness switch. */
export interface BulkSeedOptions {
  /** Messages per INSERT statement for a large mailbox (default 500 000). */
  chunk?: number;
  onProgress?: (done: number, total: number) => void;
  /**
   * Mailboxes of one size whose rows are interleaved in runs (chunk / mailboxes messages of each in
   * turn per statement), after `targets`, which each go in contiguously.
   */
  interleaved?: SeedTarget[];
  /** renice the PostgreSQL backend that seeds (root only; best effort) and build indexes without parallel workers. */
  nice?: boolean;
}

/** What seedBulk did: seconds spent inserting and building indexes. */
export interface BulkSeedReport {
  insertSeconds: number;
  indexSeconds: number;
  vacuumSeconds: number;
  messages: number;
}

/**
 * The rows of one statement: `g` (the message number) and, per row, the mailbox id, the 8-character
 * id tag and the address, as SQL. One mailbox: a range of g. Interleaved: a short range of g
 * crossed with many mailboxes. PostgreSQL puts the small unnest outside (seen in EXPLAIN), so one
 * statement writes a run of `step` messages of each mailbox in turn: the heap mixes the mailboxes
 * in runs of `step` messages (mail arriving in bursts), not message by message.
 */
interface RowSource {
  from: string;
  mailbox: string;
  tag: string;
  address: string;
}
const oneMailbox = (tag: string): RowSource => ({
  from: 'generate_series($1::int, $2::int) g',
  mailbox: '$3::text',
  tag: `'${tag}'`,
  address: '$4::text',
});
const interleaved: RowSource = {
  from: 'generate_series($1::int, $2::int) g cross join unnest($3::text[], $4::text[]) b(id, address)',
  mailbox: 'b.id',
  tag: 'right(b.id, 8)',
  address: 'b.address',
};

const threadSql = (r: RowSource) =>
  `insert into thread (id, mailbox_id, subject, created_at, last_message_at)
  select 'thr_' || ${r.tag} || lpad(g::text, 9, '0'), ${r.mailbox}, 'Thread ' || g, now() - make_interval(secs => g * 10), now() - make_interval(secs => g * 10)
  from ${r.from} where ${r.address} is not null`;

const FLAT_BODY = `btrim(regexp_replace(split_part(s.body_text, E'\\n-- \\n', 1), '\\s+', ' ', 'g'))`;
const SNIPPET_SQL = `case when length(${FLAT_BODY}) <= 140 then ${FLAT_BODY}
    else coalesce(substring(left(${FLAT_BODY}, 140) from '^(.{71,}) '), left(${FLAT_BODY}, 140)) || '…' end`;

const messageSql = (r: RowSource) => {
  const s = SENTENCES.length;
  return `insert into message (id, mailbox_id, thread_id, direction, subject, from_address, from_display_name,
    to_addresses, cc_addresses, bcc_addresses, mailbox_address, attachment_count, body_text, body_format,
    references_header, is_read, created_at, received_at, search_vector, snippet)
  -- The vector the search indexer would store (migration 20270201000000), computed in the same pass,
  -- and the snippet every writer stores (state/messages/snippet.ts: the text before the signature,
  -- whitespace collapsed, cut at a word past half of 140 characters with an ellipsis).
  select s.*, message_search_vector(s.subject, s.body_text, null), ${SNIPPET_SQL} from (select 'msg_' || ${r.tag} || lpad(g::text, 9, '0'), ${r.mailbox}, 'thr_' || ${r.tag} || lpad((1 + (g - 1) / 10)::text, 9, '0'), 'inbound',
    (${pool(SUBJECTS)})[1 + (g * 7) % ${SUBJECTS.length}] || case when g % 5 = 0 then ' (#' || (g % 10007) || ')' else '' end as subject,
    'sender' || (g % 97) || '@remote.test', (${pool(NAMES)})[1 + g % ${NAMES.length}] || ' ' || (g % 97), array[${r.address}], '{}'::text[], '{}'::text[], ${r.address},
    0,
    'Hi ' || (${pool(NAMES)})[1 + (g * 5) % ${NAMES.length}] || E',\\n\\n'
      || (${pool(SENTENCES)})[1 + (g * 3) % ${s}] || ' '
      || (${pool(SENTENCES)})[1 + (g * 11 + 5) % ${s}] || ' '
      || case when g % ${SEARCH_COMMON_EVERY} = 7 then 'The ${SEARCH_COMMON_WORD} figures are in the shared folder. ' else '' end
      || (${pool(SENTENCES)})[1 + (g * 17 + 2) % ${s}] || ' '
      || (${pool(SENTENCES)})[1 + (g * 29 + 9) % ${s}]
      || E'\\n\\nReference ref' || g || E'x.\\n-- \\n' || (${pool(NAMES)})[1 + g % ${NAMES.length}] as body_text,
    'text', '{}'::text[], g % 3 = 0,
    now() - make_interval(secs => g), now() - make_interval(secs => g)
  from ${r.from}) s`;
};

/**
 * Seeds many mailboxes at once, set-based: every secondary (non-unique) index of `message` and
 * `thread` is dropped first and rebuilt once after all rows (definitions read from the catalog,
 * as a restore would), rows go in by generate_series in chunks of `chunk` messages, then VACUUM
 * ANALYZE, so the planner knows the tables and the GIN pending list is empty (docs/api.md,
 * "Search"). Primary keys, unique constraints and foreign keys stay. Message g of a mailbox is
 * the same on every run (no random()), so search words' hit rates are known.
 */
export async function seedBulk(
  databaseUrl: string,
  targets: SeedTarget[],
  opts: BulkSeedOptions = {},
): Promise<BulkSeedReport> {
  const chunk = Math.ceil((opts.chunk ?? 500_000) / 10) * 10; // whole threads of 10 per chunk
  const total = [...targets, ...(opts.interleaved ?? [])].reduce((n, t) => n + t.count, 0);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`set maintenance_work_mem = '512MB'`);
    await client.query(`set synchronous_commit = off`);
    if (opts.nice) {
      await client.query('set max_parallel_maintenance_workers = 0');
      const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      try {
        setPriority(pid, 10);
      } catch {
        // not root, or another user's process: the seed runs at normal priority
      }
    }
    const indexes = (
      await client.query<{ indexname: string; indexdef: string }>(
        `select i.indexname, i.indexdef from pg_indexes i
        where i.schemaname = 'public' and i.tablename in ('message', 'thread')
          and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`,
      )
    ).rows;
    for (const i of indexes) await client.query(`drop index "${i.indexname}"`);
    const t0 = Date.now();
    let done = 0;
    const insert = async (r: RowSource, from: number, to: number, params: unknown[], rows: number) => {
      await client.query('begin');
      await client.query(threadSql(r), [Math.ceil(from / 10), Math.ceil(to / 10), ...params]);
      await client.query(messageSql(r), [from, to, ...params]);
      await client.query('commit');
      done += rows;
      opts.onProgress?.(done, total);
    };
    for (const t of targets) {
      for (let from = 1; from <= t.count; from += chunk) {
        const to = Math.min(t.count, from + chunk - 1);
        await insert(oneMailbox(t.mailboxId.slice(-8)), from, to, [t.mailboxId, t.address], to - from + 1);
      }
    }
    const group = opts.interleaved ?? [];
    if (group.length > 0) {
      const n = group[0]!.count;
      if (group.some((t) => t.count !== n)) throw new Error('interleaved mailboxes must have the same count');
      const step = Math.max(10, Math.floor(chunk / group.length / 10) * 10);
      const ids = group.map((t) => t.mailboxId);
      const addresses = group.map((t) => t.address);
      for (let from = 1; from <= n; from += step) {
        const to = Math.min(n, from + step - 1);
        await insert(interleaved, from, to, [ids, addresses], (to - from + 1) * group.length);
      }
    }
    for (const t of [...targets, ...group])
      await client.query('update mailbox set inbound_count = inbound_count + $2 where id = $1', [t.mailboxId, t.count]);
    // The SQL snippet must be what a writer stores, or the list would read different rows than in use.
    const sample = await client.query<{ body_text: string; snippet: string }>(
      'select body_text, snippet from message order by id limit 50',
    );
    const off = sample.rows.find((r) => r.snippet !== snippetOf(r.body_text));
    if (off) throw new Error(`seed snippet ${JSON.stringify(off.snippet)} is not snippetOf's`);
    const t1 = Date.now();
    for (const i of indexes) await client.query(i.indexdef);
    const t2 = Date.now();
    await client.query('vacuum analyze message');
    await client.query('vacuum analyze thread');
    const t3 = Date.now();
    return {
      insertSeconds: (t1 - t0) / 1000,
      indexSeconds: (t2 - t1) / 1000,
      vacuumSeconds: (t3 - t2) / 1000,
      messages: total,
    };
  } finally {
    await client.end();
  }
}

/**
 * Seeds one mailbox with `count` inbound messages (10 per thread): varied subjects, senders and
 * 4-sentence bodies (~300 characters), a reference word unique to each message, the common word in
 * 1 of 100, spread over time, newest first (seedBulk with one target: indexes rebuilt after).
 */
export async function seedMessages(
  databaseUrl: string,
  mailboxId: string,
  address: string,
  count: number,
): Promise<void> {
  await seedBulk(databaseUrl, [{ mailboxId, address, count }]);
}
