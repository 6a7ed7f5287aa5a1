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

/**
 * Seeds one mailbox with `count` inbound messages (10 per thread) by generate_series in a few
 * set-based statements: varied subjects, senders and 4-sentence bodies (~300 characters), a
 * reference word unique to each message, the common word in 1 of 100, spread over time, newest
 * first. The search vector is the generated column the ingest writes too. The GIN index is built
 * once after the rows (as CREATE INDEX would on a restore) rather than row by row through its
 * pending list, with the definition read from the catalog; then VACUUM ANALYZE, so the planner
 * knows the table and the GIN pending list is empty (docs/api.md, "Search").
 */
export async function seedMessages(
  databaseUrl: string,
  mailboxId: string,
  address: string,
  count: number,
): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const tag = mailboxId.slice(-8);
    await client.query(`set maintenance_work_mem = '256MB'`);
    const gin = (
      await client.query<{ indexdef: string }>(
        `select indexdef from pg_indexes where tablename = 'message' and indexname = 'message_search_idx'`,
      )
    ).rows[0]?.indexdef;
    if (gin) await client.query('drop index message_search_idx');
    await client.query(
      `insert into thread (id, mailbox_id, subject, created_at, last_message_at)
      select 'thr_${tag}' || lpad(g::text, 9, '0'), $1, 'Thread ' || g, now() - make_interval(secs => g * 10), now() - make_interval(secs => g * 10)
      from generate_series(1, ceil($2::int / 10.0)::int) g`,
      [mailboxId, count],
    );
    const s = SENTENCES.length;
    await client.query(
      `insert into message (id, mailbox_id, thread_id, direction, subject, from_address, from_display_name,
        to_addresses, cc_addresses, bcc_addresses, mailbox_address, attachment_count, body_text, body_format,
        references_header, is_read, created_at, received_at)
      select 'msg_${tag}' || lpad(g::text, 9, '0'), $1, 'thr_${tag}' || lpad((1 + (g - 1) / 10)::text, 9, '0'), 'inbound',
        (${pool(SUBJECTS)})[1 + (g * 7) % ${SUBJECTS.length}] || case when g % 5 = 0 then ' (#' || (g % 10007) || ')' else '' end,
        'sender' || (g % 97) || '@remote.test', (${pool(NAMES)})[1 + g % ${NAMES.length}] || ' ' || (g % 97), array[$3::text], '{}', '{}', $3,
        0,
        'Hi ' || (${pool(NAMES)})[1 + (g * 5) % ${NAMES.length}] || E',\\n\\n'
          || (${pool(SENTENCES)})[1 + (g * 3) % ${s}] || ' '
          || (${pool(SENTENCES)})[1 + (g * 11 + 5) % ${s}] || ' '
          || case when g % ${SEARCH_COMMON_EVERY} = 7 then 'The ${SEARCH_COMMON_WORD} figures are in the shared folder. ' else '' end
          || (${pool(SENTENCES)})[1 + (g * 17 + 2) % ${s}] || ' '
          || (${pool(SENTENCES)})[1 + (g * 29 + 9) % ${s}]
          || E'\\n\\nReference ref' || g || E'x.\\n-- \\n' || (${pool(NAMES)})[1 + g % ${NAMES.length}],
        'text', '{}', g % 3 = 0,
        now() - make_interval(secs => g), now() - make_interval(secs => g)
      from generate_series(1, $2::int) g`,
      [mailboxId, count, address],
    );
    await client.query('update mailbox set inbound_count = inbound_count + $2 where id = $1', [mailboxId, count]);
    if (gin) await client.query(gin);
    await client.query('vacuum analyze message');
    await client.query('vacuum analyze thread');
  } finally {
    await client.end();
  }
}
