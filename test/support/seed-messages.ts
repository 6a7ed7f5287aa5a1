import { sql } from '../../src/storage/database.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';
import type { MailboxEvent } from '../../src/types/mailbox-event.js';
import type { Scope } from '../../src/core/access/scopes.js';
import type { TestServer } from './harness.js';

/**
 * Writes message rows straight into the real database, the way the inbound store and the send
 * path will: thread, message, recipients, attachments, and the mailbox counter that backs
 * totalCount. Seeding only; nothing of the storage is mocked.
 */
export interface SeedMessage {
  mailboxId: string;
  direction?: 'inbound' | 'outbound';
  threadId?: string;
  subject?: string;
  fromAddress?: string;
  fromDisplayName?: string;
  to?: string[];
  cc?: string[];
  bcc?: string[];
  bodyText?: string | null;
  bodyHtml?: string | null;
  bodyFormat?: 'text' | 'html' | 'text+html';
  rawBlobKey?: string | null;
  inReplyToMessageId?: string | null;
  createdAt?: Date;
  receivedAt?: Date | null;
  sentAt?: Date | null;
  readAt?: Date | null;
  deletedAt?: Date | null;
  deliveryStatus?: 'queued' | 'delivered' | 'deferred' | 'failed';
  recipients?: Array<{
    address: string;
    kind: 'to' | 'cc' | 'bcc';
    status: string;
    remoteReply?: string | null;
    attempts?: number;
    deliveredAt?: Date | null;
  }>;
  attachments?: Array<{ filename: string; contentType: string; sizeBytes: number }>;
}

export interface Seeded {
  messageId: string;
  threadId: string;
  createdAt: Date;
}

export async function seedMessage(server: TestServer, m: SeedMessage): Promise<Seeded> {
  const { db } = server.runtime.services;
  const direction = m.direction ?? 'inbound';
  const createdAt = m.createdAt ?? new Date();
  const messageId = newId(ID_PREFIX.message, createdAt.getTime());
  return db.tx(async (trx) => {
    const mailbox = (await sql<{ address: string }>`select address from mailbox where id = ${m.mailboxId}`.execute(trx))
      .rows[0]!;
    const threadId = m.threadId ?? newId(ID_PREFIX.thread, createdAt.getTime());
    if (!m.threadId) {
      await sql`insert into thread (id, mailbox_id, subject, created_at, last_message_at)
        values (${threadId}, ${m.mailboxId}, ${m.subject ?? ''}, ${createdAt}, ${createdAt})`.execute(trx);
    }
    const from = m.fromAddress ?? (direction === 'outbound' ? mailbox.address : 'sender@remote.test');
    const to = m.to ?? (direction === 'outbound' ? ['friend@remote.test'] : [mailbox.address]);
    const bodyText = m.bodyText === undefined ? 'Hello.' : m.bodyText;
    const bodyHtml = m.bodyHtml ?? null;
    const readAt = m.readAt ?? null;
    await sql`insert into message (id, mailbox_id, thread_id, direction, subject, from_address, from_display_name, to_addresses,
        cc_addresses, bcc_addresses, mailbox_address, attachment_count, body_text, body_html, body_format, raw_blob_key,
        in_reply_to_message_id, references_header, is_read, read_at, deleted_at, delivery_status, created_at, received_at, sent_at)
      values (${messageId}, ${m.mailboxId}, ${threadId}, ${direction}, ${m.subject ?? ''}, ${from}, ${m.fromDisplayName ?? ''},
        ${to}::text[], ${m.cc ?? []}::text[], ${m.bcc ?? []}::text[], ${mailbox.address}, ${m.attachments?.length ?? 0},
        ${bodyText}, ${bodyHtml}, ${m.bodyFormat ?? (bodyHtml ? (bodyText ? 'text+html' : 'html') : 'text')}, ${m.rawBlobKey ?? null},
        ${m.inReplyToMessageId ?? null}, ${[]}::text[], ${readAt !== null}, ${readAt}, ${m.deletedAt ?? null},
        ${direction === 'outbound' ? (m.deliveryStatus ?? 'queued') : null}, ${createdAt},
        ${m.receivedAt === undefined ? (direction === 'inbound' ? createdAt : null) : m.receivedAt},
        ${m.sentAt === undefined ? (direction === 'outbound' ? createdAt : null) : m.sentAt})`.execute(trx);
    for (const r of m.recipients ?? []) {
      await sql`insert into message_recipient (id, message_id, address, kind, status, remote_reply, attempts, updated_at, delivered_at)
        values (${newId(ID_PREFIX.recipient)}, ${messageId}, ${r.address}, ${r.kind}, ${r.status}, ${r.remoteReply ?? null},
          ${r.attempts ?? 0}, ${createdAt}, ${r.deliveredAt ?? null})`.execute(trx);
    }
    for (const a of m.attachments ?? []) {
      const id = newId(ID_PREFIX.attachment);
      await sql`insert into attachment (id, mailbox_id, message_id, filename, content_type, size_bytes, sha256, blob_key, created_at)
        values (${id}, ${m.mailboxId}, ${messageId}, ${a.filename}, ${a.contentType}, ${a.sizeBytes}, ${'0'.repeat(64)},
          ${`att/${id}`}, ${createdAt})`.execute(trx);
    }
    if (!m.deletedAt) {
      const column = direction === 'inbound' ? sql`inbound_count` : sql`outbound_count`;
      await sql`update mailbox set ${column} = ${column} + 1 where id = ${m.mailboxId}`.execute(trx);
    }
    await sql`update thread set last_message_at = greatest(last_message_at, ${createdAt}) where id = ${threadId}`.execute(
      trx,
    );
    return { messageId, threadId, createdAt };
  });
}

/** `count` messages one second apart, oldest first, newest at `newest` (default now). */
export async function seedMany(
  server: TestServer,
  count: number,
  m: SeedMessage & { newest?: Date },
): Promise<Seeded[]> {
  const newest = (m.newest ?? new Date()).getTime();
  const out: Seeded[] = [];
  for (let i = count - 1; i >= 0; i--) {
    out.push(
      await seedMessage(server, {
        ...m,
        subject: m.subject ?? `message ${count - 1 - i}`,
        createdAt: new Date(newest - i * 1000),
      }),
    );
  }
  return out;
}

/**
 * Many rows in one statement (query-plan tests): one thread, `count` live messages spread over
 * both directions, counters kept right.
 */
export async function seedBulk(server: TestServer, mailboxId: string, count: number): Promise<void> {
  const { db } = server.runtime.services;
  await db.tx(async (trx) => {
    const threadId = newId(ID_PREFIX.thread);
    await sql`insert into thread (id, mailbox_id, subject, created_at, last_message_at) values (${threadId}, ${mailboxId}, 'bulk', now(), now())`.execute(
      trx,
    );
    await sql`insert into message (id, mailbox_id, thread_id, direction, from_address, to_addresses, cc_addresses, bcc_addresses,
        mailbox_address, body_format, references_header, created_at)
      select ${mailboxId} || '-' || lpad(g::text, 8, '0'), ${mailboxId}, ${threadId}, case when g % 2 = 0 then 'inbound' else 'outbound' end,
        'bulk@remote.test', '{}'::text[], '{}'::text[], '{}'::text[], 'bulk@remote.test', 'text', '{}'::text[],
        now() - g * interval '1 second'
      from generate_series(1, ${count}::int) g`.execute(trx);
    const half = Math.floor(count / 2);
    await sql`update mailbox set inbound_count = inbound_count + ${half}, outbound_count = outbound_count + ${count - half} where id = ${mailboxId}`.execute(
      trx,
    );
  });
  await sql`analyze message`.execute(db.db);
}

/** A mailbox token with exactly `scopes`, minted as the domain route would. */
export async function mintMailboxToken(
  server: TestServer,
  mailboxId: string,
  scopes: readonly Scope[],
): Promise<string> {
  const { db, tokenMinter } = server.runtime.services;
  return db.tx(async (trx) => {
    const row = (await sql<{ domain_id: string }>`select domain_id from mailbox where id = ${mailboxId}`.execute(trx))
      .rows[0]!;
    const token = await tokenMinter.mint(trx, {
      kind: 'mailbox',
      domainId: row.domain_id,
      mailboxId,
      name: 'test-narrow',
      scopes,
      expiresAt: new Date(Date.now() + 86_400_000),
      createdSource: 'domain',
      parentTokenId: null,
    });
    return token.accessToken;
  });
}

export async function eventsOf(
  server: TestServer,
  mailboxId: string,
): Promise<Array<{ seq: number; type: string; payload: MailboxEvent }>> {
  const rows = await server.runtime.services.db.rows(sql<{
    seq: string | number;
    type: string;
    payload: MailboxEvent | string;
  }>`select seq, type, payload
    from mailbox_event where mailbox_id = ${mailboxId} order by seq`);
  return rows.map((r) => ({
    seq: Number(r.seq),
    type: r.type,
    payload: typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload,
  }));
}

export async function countersOf(
  server: TestServer,
  mailboxId: string,
): Promise<{ inbound: number; outbound: number }> {
  const row = await server.runtime.services.db.one(sql<{
    inbound_count: string | number;
    outbound_count: string | number;
  }>`select inbound_count,
    outbound_count from mailbox where id = ${mailboxId}`);
  return { inbound: Number(row!.inbound_count), outbound: Number(row!.outbound_count) };
}

export interface Tenants {
  domA: { domainId: string; name: string; token: string };
  a1: { mailboxId: string; address: string; token: string };
  a2: { mailboxId: string; address: string; token: string };
  domB: { domainId: string; name: string; token: string };
  b1: { mailboxId: string; address: string; token: string };
}

/** Two domains, two mailboxes in the first and one in the second: the isolation fixture. */
export async function twoTenants(server: TestServer): Promise<Tenants> {
  const domA = await server.createDomain();
  const domB = await server.createDomain();
  const a1 = await server.createMailbox(domA.token, `a1@${domA.name}`, 'A One');
  const a2 = await server.createMailbox(domA.token, `a2@${domA.name}`);
  const b1 = await server.createMailbox(domB.token, `b1@${domB.name}`);
  return { domA, a1, a2, domB, b1 };
}
