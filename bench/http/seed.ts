import pg from 'pg';

/**
 * Seeds one mailbox with `count` inbound messages (10 per thread) by generate_series, the way a
 * real mailbox of that size looks to the list query: spread over time, newest first.
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
    await client.query(
      `insert into thread (id, mailbox_id, subject, created_at, last_message_at)
      select 'thr_${tag}' || lpad(g::text, 9, '0'), $1, 'Thread ' || g, now() - make_interval(secs => g * 10), now() - make_interval(secs => g * 10)
      from generate_series(1, ceil($2::int / 10.0)::int) g`,
      [mailboxId, count],
    );
    await client.query(
      `insert into message (id, mailbox_id, thread_id, direction, subject, from_address, from_display_name,
        to_addresses, cc_addresses, bcc_addresses, mailbox_address, attachment_count, body_text, body_format,
        references_header, is_read, created_at, received_at)
      select 'msg_${tag}' || lpad(g::text, 9, '0'), $1, 'thr_${tag}' || lpad((1 + (g - 1) / 10)::text, 9, '0'), 'inbound',
        'Message number ' || g, 'sender' || (g % 97) || '@remote.test', 'Sender ' || (g % 97), array[$3::text], '{}', '{}', $3,
        0, 'Hello, this is message ' || g || ' of the benchmark mailbox.', 'text', '{}', g % 3 = 0,
        now() - make_interval(secs => g), now() - make_interval(secs => g)
      from generate_series(1, $2::int) g`,
      [mailboxId, count, address],
    );
    await client.query('update mailbox set inbound_count = inbound_count + $2 where id = $1', [mailboxId, count]);
    await client.query('analyze message');
    await client.query('analyze thread');
  } finally {
    await client.end();
  }
}
