import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { rowsOf, sendBody, twoMailboxes } from './helpers.js';
import type { InboundMessage } from '../../src/core/flows/inbound/inbound.store.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});
const q = rowsOf(() => server);

const message = (mailboxId: string, extra: Partial<InboundMessage> = {}): InboundMessage => ({
  mailboxId,
  from: 'carol@external.example',
  fromDisplayName: 'Carol',
  to: ['alice@example.test'],
  cc: ['dan@external.example'],
  subject: 'Re: Hello',
  bodyText: 'reply',
  bodyHtml: '<p>reply</p>',
  internetMessageId: `<${Math.random().toString(36).slice(2)}@external.example>`,
  inReplyTo: null,
  references: [],
  receivedAt: new Date('2026-01-02T03:04:05.678Z'),
  sentAt: new Date('2026-01-02T03:00:00.000Z'),
  authResults: { spf: 'pass' },
  ...extra,
});

describe('InboundStore', () => {
  it('stores an inbound message, counts it and logs message.received', async () => {
    const { a } = await twoMailboxes(server);
    const events: string[] = [];
    const unsubscribe = server.runtime.services.bus.subscribe((e) => events.push(`${e.type}:${e.mailboxId}`));
    const stored = await server.runtime.services.inbound.store(undefined, message(a.mailboxId));
    unsubscribe();
    const [row] = await q`select * from message where id = ${stored.messageId}`;
    expect(row).toMatchObject({
      direction: 'inbound',
      thread_id: stored.threadId,
      from_address: 'carol@external.example',
      from_display_name: 'Carol',
      mailbox_address: a.address,
      body_format: 'text+html',
      is_read: false,
      delivery_status: null,
      bcc_addresses: [],
      auth_results: { spf: 'pass' },
    });
    expect(new Date(row.received_at).toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(new Date(row.sent_at).toISOString()).toBe('2026-01-02T03:00:00.000Z');
    const [mb] = await q`select inbound_count from mailbox where id = ${a.mailboxId}`;
    expect(Number(mb.inbound_count)).toBe(1);
    expect(events).toEqual([`message.received:${a.mailboxId}`]);
    expect(stored.events[0]).toMatchObject({ type: 'message.received', data: { messageId: stored.messageId } });
  });

  it('threads by In-Reply-To, then by References, within the mailbox only', async () => {
    const { a, b } = await twoMailboxes(server);
    const sent = await server.api(a.token).post('/api/messages/send', sendBody('carol@external.example'));
    const [sentRow] = await q`select internet_message_id from message where id = ${sent.body.data.messageId}`;
    const inbound = server.runtime.services.inbound;
    const direct = await inbound.store(
      undefined,
      message(a.mailboxId, { inReplyTo: sentRow.internet_message_id, references: [sentRow.internet_message_id] }),
    );
    expect(direct.threadId).toBe(sent.body.data.threadId);
    const [directRow] = await q`select in_reply_to_message_id from message where id = ${direct.messageId}`;
    expect(directRow.in_reply_to_message_id).toBe(sent.body.data.messageId);
    // Only an ancestor is known here: same thread, but no direct parent to name.
    const viaRefs = await inbound.store(
      undefined,
      message(a.mailboxId, {
        inReplyTo: '<unknown@external.example>',
        references: [sentRow.internet_message_id, '<unknown@external.example>'],
      }),
    );
    expect(viaRefs.threadId).toBe(sent.body.data.threadId);
    const [viaRow] =
      await q`select in_reply_to_message_id, references_header from message where id = ${viaRefs.messageId}`;
    expect(viaRow).toEqual({
      in_reply_to_message_id: null,
      references_header: [sentRow.internet_message_id, '<unknown@external.example>'],
    });
    // Another mailbox never joins A's thread.
    const elsewhere = await inbound.store(undefined, message(b.mailboxId, { inReplyTo: sentRow.internet_message_id }));
    expect(elsewhere.threadId).not.toBe(sent.body.data.threadId);
    const unrelated = await inbound.store(
      undefined,
      message(a.mailboxId, { references: ['garbage', '<nope@x.example>'] }),
    );
    expect(unrelated.threadId).not.toBe(sent.body.data.threadId);
    const [thread] = await q`select subject from thread where id = ${unrelated.threadId}`;
    expect(thread.subject).toBe('Re: Hello');
  });

  it("commits inside the caller's transaction and leaves publishing to the caller", async () => {
    const { a } = await twoMailboxes(server);
    const services = server.runtime.services;
    await expect(
      services.db.tx(async (trx) => {
        await services.inbound.store(trx, message(a.mailboxId));
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    const rows = await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId}`;
    expect(rows[0].n).toBe(0);
  });
});
