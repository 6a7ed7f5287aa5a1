import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseMigratedTo } from './migration-support.js';

// Migration20270210000000MailboxContacts on a database that already holds mail: the contacts are
// what the "already contacted" question read before it (docs/api.md, "Outbound policy"):
// recipients of outbound messages sent without approval or approved, senders of inbound messages
// (lower-cased); never the recipients of a message still held, rejected or expired.

let db: Awaited<ReturnType<typeof databaseMigratedTo>> | undefined;
const q = () => db!.q();

beforeAll(async () => {
  db = await databaseMigratedTo('Migration20270205000000ReplyTextDeferred');
  const k = q();
  const now = new Date('2027-02-01T10:00:00Z');
  await sql`insert into domain (id, name, created_at) values ('dom_1', 'a.test', ${now})`.execute(k);
  for (const box of ['box_1', 'box_2'])
    await sql`insert into mailbox (id, domain_id, address, local_part, created_at)
      values (${box}, 'dom_1', ${`${box}@a.test`}, ${box}, ${now})`.execute(k);
  const message = async (
    id: string,
    box: string,
    direction: 'inbound' | 'outbound',
    o: { from?: string; to?: string[]; approval?: string | null; at?: Date },
  ) => {
    const at = o.at ?? now;
    await sql`insert into thread (id, mailbox_id, created_at, last_message_at) values (${`thr_${id}`}, ${box}, ${at}, ${at})`.execute(
      k,
    );
    await sql`insert into message (id, mailbox_id, thread_id, direction, from_address, to_addresses, cc_addresses,
        bcc_addresses, mailbox_address, body_format, references_header, created_at, approval_status)
      values (${id}, ${box}, ${`thr_${id}`}, ${direction}, ${o.from ?? `${box}@a.test`}, ${o.to ?? []}, ${[]}, ${[]},
        ${`${box}@a.test`}, 'text', ${[]}, ${at}, ${o.approval ?? null})`.execute(k);
    for (const [i, address] of (o.to ?? []).entries())
      if (direction === 'outbound')
        await sql`insert into message_recipient (id, message_id, address, kind, status, attempts, updated_at)
          values (${`rcp_${id}_${i}`}, ${id}, ${address}, 'to', 'queued', 0, ${at})`.execute(k);
  };
  await message('msg_1', 'box_1', 'outbound', { to: ['sent@x.test', 'also@x.test'] });
  await message('msg_2', 'box_1', 'outbound', {
    to: ['sent@x.test'],
    at: new Date('2027-01-01T00:00:00Z'), // the earlier of two sends to one address dates the contact
  });
  await message('msg_3', 'box_1', 'outbound', { to: ['approved@x.test'], approval: 'approved' });
  await message('msg_4', 'box_1', 'outbound', { to: ['pending@x.test'], approval: 'pending' });
  await message('msg_5', 'box_1', 'outbound', { to: ['rejected@x.test'], approval: 'rejected' });
  await message('msg_6', 'box_1', 'outbound', { to: ['expired@x.test'], approval: 'expired' });
  await message('msg_7', 'box_1', 'inbound', { from: ' Writer@X.test', to: ['box_1@a.test'] });
  await message('msg_8', 'box_1', 'inbound', { from: '', to: ['box_1@a.test'] }); // a bounce: no sender
  await message('msg_9', 'box_2', 'outbound', { to: ['sent@x.test'] }); // another mailbox's contact
  await db.migrateRest();
}, 120_000);

afterAll(async () => {
  await db?.close();
});

describe('mailbox contacts migration backfill', () => {
  it('holds what the messages made contacted, per mailbox, dated by the first message', async () => {
    const rows = (
      await sql<{ mailbox_id: string; address: string; created_at: string | Date }>`
        select mailbox_id, address, created_at from mailbox_contact order by mailbox_id, address`.execute(q())
    ).rows.map((r) => `${r.mailbox_id} ${r.address} ${new Date(r.created_at).toISOString().slice(0, 10)}`);
    expect(rows).toEqual([
      'box_1 also@x.test 2027-02-01',
      'box_1 approved@x.test 2027-02-01',
      'box_1 sent@x.test 2027-01-01',
      'box_1 writer@x.test 2027-02-01',
      'box_2 sent@x.test 2027-02-01',
    ]);
  });
});
