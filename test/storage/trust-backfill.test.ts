import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseMigratedTo } from './migration-support.js';

// Migrations 20270402000000 and 20270402000100 on a database that already holds mail: a held
// message takes its writer from its `held` audit entry (self-approval refused for it too), and a
// contact that only an unauthenticated inbound message made is no longer known (docs/trust.md).

let db: Awaited<ReturnType<typeof databaseMigratedTo>> | undefined;
const q = () => db!.q();

beforeAll(async () => {
  db = await databaseMigratedTo('Migration20270310000000SubmissionQueue');
  const k = q();
  const now = new Date('2027-03-20T10:00:00Z');
  await sql`insert into domain (id, name, created_at) values ('dom_1', 'a.test', ${now})`.execute(k);
  await sql`insert into mailbox (id, domain_id, address, local_part, created_at)
    values ('box_1', 'dom_1', 'box_1@a.test', 'box_1', ${now})`.execute(k);
  const message = async (id: string, direction: string, o: { from?: string; auth?: unknown; approval?: string }) => {
    await sql`insert into thread (id, mailbox_id, created_at, last_message_at) values (${`thr_${id}`}, 'box_1', ${now}, ${now})`.execute(
      k,
    );
    await sql`insert into message (id, mailbox_id, thread_id, direction, from_address, to_addresses, cc_addresses,
        bcc_addresses, mailbox_address, body_format, references_header, created_at, approval_status, auth_results)
      values (${id}, 'box_1', ${`thr_${id}`}, ${direction}, ${o.from ?? 'box_1@a.test'}, ${[]}, ${[]}, ${[]},
        'box_1@a.test', 'text', ${[]}, ${now}, ${o.approval ?? null}, ${o.auth === undefined ? null : JSON.stringify(o.auth)}::jsonb)`.execute(
      k,
    );
  };
  await message('msg_forged', 'inbound', { from: 'drop@evil.test', auth: { dmarc: { result: 'none' } } });
  await message('msg_signed', 'inbound', { from: 'desk@good.test', auth: { dmarc: { result: 'pass' } } });
  await message('msg_local', 'inbound', { from: 'peer@a.test' });
  await message('msg_held', 'outbound', { approval: 'pending' });
  await sql`insert into message_recipient (id, message_id, address, kind, status, attempts, updated_at)
    values ('rcp_1', 'msg_held', 'sent@x.test', 'to', 'held', 0, ${now})`.execute(k);
  await sql`insert into audit_entry (id, mailbox_id, domain_id, token_id, channel, decision, recipient_count, message_id, created_at)
    values ('aud_1', 'box_1', 'dom_1', 'tok_agent', 'mcp', 'held', 1, 'msg_held', ${now})`.execute(k);
  for (const address of ['drop@evil.test', 'desk@good.test', 'peer@a.test', 'sent@x.test'])
    await sql`insert into mailbox_contact (mailbox_id, address, created_at) values ('box_1', ${address}, ${now})`.execute(
      k,
    );
  await db.migrateRest();
}, 120_000);

afterAll(async () => {
  await db?.close();
});

describe('trust migrations on existing data', () => {
  it('keeps authenticated senders and sent-to recipients, drops senders only unauthenticated mail made known', async () => {
    const rows = (await sql<{ address: string }>`select address from mailbox_contact order by address`.execute(q()))
      .rows;
    expect(rows.map((r) => r.address)).toEqual(['desk@good.test', 'peer@a.test']);
  });

  it('records the writer of a held message from its audit entry', async () => {
    const row = (
      await sql<{
        sent_by_token_id: string | null;
      }>`select sent_by_token_id from message where id = 'msg_held'`.execute(q())
    ).rows[0];
    expect(row?.sent_by_token_id).toBe('tok_agent');
  });
});
