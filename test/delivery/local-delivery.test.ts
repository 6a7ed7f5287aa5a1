import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { rowsOf, sendBody, twoMailboxes, waitFor } from './helpers.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';

// The api and worker roles in one process: the worker wakes on `message.sent` and delivers locally.
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ roles: ['api', 'worker'] });
});
afterAll(async () => {
  await server?.close();
});
const q = rowsOf(() => server);

const deliveredCopy = (mailboxId: string, internetMessageId: string) =>
  waitFor(
    async () =>
      (
        await q`select * from message where mailbox_id = ${mailboxId} and direction = 'inbound' and internet_message_id = ${internetMessageId}`
      )[0],
    10_000,
    'local delivery',
  );
const outbound = async (messageId: string) => (await q`select * from message where id = ${messageId}`)[0];

describe('local delivery end to end', () => {
  it("delivers A → B as inbound, threads B's reply back into A's thread, and marks A's copy delivered", async () => {
    const { a, b } = await twoMailboxes(server);
    const sent = await server
      .api(a.token)
      .post(
        '/api/messages/send',
        sendBody(b.address, { subject: 'Plan', bodyText: 'Shall we?', bodyHtml: '<b>Shall we?</b>' }),
      );
    expect(sent.status).toBe(202);
    const original = await outbound(sent.body.data.messageId);
    const copy = await deliveredCopy(b.mailboxId, original.internet_message_id);
    expect(copy).toMatchObject({
      direction: 'inbound',
      from_address: a.address,
      from_display_name: 'Alice',
      to_addresses: [b.address],
      subject: 'Plan',
      body_text: 'Shall we?',
      body_html: '<b>Shall we?</b>',
      body_format: 'text+html',
      mailbox_address: b.address,
      is_read: false,
      bcc_addresses: [],
    });
    expect(copy.thread_id).not.toBe(sent.body.data.threadId); // threads are per mailbox
    await waitFor(
      async () => (await outbound(sent.body.data.messageId)).delivery_status === 'delivered',
      5000,
      'delivered status',
    );
    const [recipient] =
      await q`select status, remote_reply, delivered_at, attempts from message_recipient where message_id = ${sent.body.data.messageId}`;
    expect(recipient).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(recipient.delivered_at).not.toBeNull();
    await waitFor(
      async () =>
        (await q`select status from outbox_job where message_id = ${sent.body.data.messageId}`)[0].status === 'done',
      5000,
      'job done',
    );
    const aEvents = await q`select type, payload from mailbox_event where mailbox_id = ${a.mailboxId} order by seq`;
    expect(aEvents.map((e) => e.type)).toEqual(['message.sent', 'message.delivery']);
    expect(aEvents[1].payload.data).toMatchObject({
      messageId: sent.body.data.messageId,
      recipient: b.address,
      recipientStatus: 'delivered',
      deliveryStatus: 'delivered',
    });
    const bEvents = await q`select type from mailbox_event where mailbox_id = ${b.mailboxId} order by seq`;
    expect(bEvents.map((e) => e.type)).toEqual(['message.received']);

    const reply = await server.api(b.token).post(`/api/messages/${copy.id}/reply`, { bodyText: 'Yes.' });
    expect(reply.status).toBe(202);
    expect(reply.body.data.threadId).toBe(copy.thread_id);
    const replyRow = await outbound(reply.body.data.messageId);
    expect(replyRow).toMatchObject({
      subject: 'Re: Plan',
      to_addresses: [a.address],
      references_header: [original.internet_message_id],
    });
    const back = await deliveredCopy(a.mailboxId, replyRow.internet_message_id);
    expect(back.thread_id).toBe(sent.body.data.threadId);
    expect(back.in_reply_to_message_id).toBe(sent.body.data.messageId);
    const counts =
      await q`select id, inbound_count, outbound_count from mailbox where id = any(${[a.mailboxId, b.mailboxId]}::text[])`;
    expect(counts.map((c) => [c.id, Number(c.inbound_count), Number(c.outbound_count)]).sort()).toEqual(
      [
        [a.mailboxId, 1, 1],
        [b.mailboxId, 1, 1],
      ].sort(),
    );
  });

  it('leaves an external recipient queued, with the job visibly pending and not spinning', async () => {
    const { a, b } = await twoMailboxes(server);
    const sent = await server.api(a.token).post('/api/messages/send', sendBody([b.address, 'carol@external.example']));
    const original = await outbound(sent.body.data.messageId);
    await deliveredCopy(b.mailboxId, original.internet_message_id);
    const job = await waitFor(
      async () => (await q`select * from outbox_job where message_id = ${original.id} and last_error is not null`)[0],
      5000,
      'job postponed',
    );
    expect(job).toMatchObject({
      status: 'pending',
      last_error: 'external delivery not configured',
      lease_until: null,
      attempts: 1,
    });
    expect(new Date(job.run_after).getTime()).toBeGreaterThan(Date.now() + 60_000);
    const recipients =
      await q`select address, status from message_recipient where message_id = ${original.id} order by address`;
    expect(recipients).toEqual(
      [
        { address: b.address, status: 'delivered' },
        { address: 'carol@external.example', status: 'queued' },
      ].sort((x, y) => x.address.localeCompare(y.address)),
    );
    expect((await outbound(original.id)).delivery_status).toBe('queued');
    await new Promise((r) => setTimeout(r, 300));
    expect((await q`select attempts from outbox_job where id = ${job.id}`)[0].attempts).toBe(1);
  });

  it('delivers Bcc without revealing it, aliases into their mailbox once, attachments as copies', async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const c = await server.createMailbox(domain.token, `carl@${domain.name}`, 'Carl');
    const alias = `bobby@${domain.name}`;
    await q`insert into mailbox_alias (id, mailbox_id, address, is_active, created_at) values (${newId(ID_PREFIX.alias)}, ${b.mailboxId}, ${alias}, true, now())`;
    const form = new FormData();
    form.set('file', new Blob(['%PDF-1.7 tiny'], { type: 'application/pdf' }), 'plan.pdf');
    const upload = await server.api(a.token).raw('/api/messages/attachments', { method: 'POST', body: form });
    expect(upload.status).toBe(201);
    const sent = await server.api(a.token).post(
      '/api/messages/send',
      sendBody([b.address, alias], {
        bccAddresses: [c.address],
        attachmentIds: [upload.body.data.attachmentUploadId],
      }),
    );
    expect(sent.status).toBe(202);
    const original = await outbound(sent.body.data.messageId);
    await waitFor(async () => (await outbound(original.id)).delivery_status === 'delivered', 10_000, 'all delivered');
    const bCopies =
      await q`select id, to_addresses, bcc_addresses, attachment_count from message where mailbox_id = ${b.mailboxId} and direction = 'inbound'`;
    expect(bCopies).toHaveLength(1);
    expect(bCopies[0]).toMatchObject({ to_addresses: [b.address, alias], bcc_addresses: [], attachment_count: 1 });
    const cCopy = await deliveredCopy(c.mailboxId, original.internet_message_id);
    expect(cCopy.bcc_addresses).toEqual([]);
    const [att] =
      await q`select mailbox_id, filename, content_type, size_bytes, blob_key from attachment where message_id = ${bCopies[0].id}`;
    const [src] = await q`select blob_key from attachment where id = ${upload.body.data.attachmentUploadId}`;
    expect(att).toMatchObject({
      mailbox_id: b.mailboxId,
      filename: 'plan.pdf',
      content_type: 'application/pdf',
      blob_key: src.blob_key,
    });
    expect(Number(att.size_bytes)).toBe(13);
    expect((await server.runtime.services.blobs.get(att.blob_key)).toString()).toBe('%PDF-1.7 tiny');
  });

  it('fails an unknown address of a hosted domain at once (550 5.1.1)', async () => {
    const { domain, a } = await twoMailboxes(server);
    const sent = await server.api(a.token).post('/api/messages/send', sendBody(`nobody@${domain.name}`));
    await waitFor(
      async () => (await outbound(sent.body.data.messageId)).delivery_status === 'failed',
      10_000,
      'failed status',
    );
    const [recipient] =
      await q`select status, remote_reply from message_recipient where message_id = ${sent.body.data.messageId}`;
    expect(recipient).toEqual({ status: 'failed', remote_reply: expect.stringMatching(/^550 5\.1\.1/) });
  });
});
