import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody, waitFor } from '../delivery/helpers.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { addAlias, startSmtpTestServer, submissionPort, submitter } from './world.js';

let server: TestServer;
let x: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
let bob: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);

beforeAll(async () => {
  server = await startSmtpTestServer({ roles: ['api', 'smtp', 'worker'], env: { WORKER_POLL_INTERVAL: '50ms' } });
  x = await server.createDomain(undefined, { sendRateLimitPerMinute: 1000 });
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  bob = await server.createMailbox(x.token, `bob@${x.name}`, 'Bob');
  await addAlias(server, alice.mailboxId, `sales@${x.name}`);
});
afterAll(async () => {
  await server?.close();
});

describe('SMTP submission: accepted mail goes through the core send path', () => {
  it('queues a message sent by nodemailer over verified STARTTLS and delivers it locally', async () => {
    const client = submitter(server, alice.address, alice.token);
    const info = await client.sendMail({
      from: { name: 'Alice A.', address: alice.address },
      to: bob.address,
      cc: 'carol@remote.example',
      bcc: 'dave@remote.example',
      subject: 'Grüße über SMTP',
      text: 'Plain body ✓',
      html: '<p>HTML body ✓</p>',
      attachments: [
        { filename: 'notes.txt', content: 'attached text' },
        { filename: 'data.bin', content: Buffer.alloc(70_000, 7) },
      ],
    });
    client.close();
    expect(info.response).toMatch(/^250 2\.0\.0 Queued as msg_/);
    const messageId = /Queued as (msg_\w+)/.exec(info.response)![1]!;
    const [row] = await q`select * from message where id = ${messageId}`;
    expect(row).toMatchObject({
      mailbox_id: alice.mailboxId,
      direction: 'outbound',
      subject: 'Grüße über SMTP',
      from_address: alice.address,
      from_display_name: 'Alice A.',
      to_addresses: [bob.address],
      cc_addresses: ['carol@remote.example'],
      bcc_addresses: ['dave@remote.example'],
      body_text: 'Plain body ✓',
      body_format: 'text+html',
      attachment_count: 2,
      internet_message_id: info.messageId,
    });
    expect(row.body_html).toContain('HTML body ✓');
    expect(row.raw_blob_key).toMatch(/^raw\//);
    const recipients = await q`select address, kind from message_recipient where message_id = ${messageId} order by id`;
    expect(recipients.map((r) => `${r.kind}:${r.address}`).sort()).toEqual(
      [`cc:carol@remote.example`, `to:${bob.address}`, 'bcc:dave@remote.example'].sort(),
    );
    const [job] = await q`select trace_context from outbox_job where message_id = ${messageId}`;
    expect(job.trace_context).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    const attachments =
      await q`select filename, size_bytes from attachment where message_id = ${messageId} order by filename`;
    expect(attachments.map((a) => [a.filename, Number(a.size_bytes)])).toEqual([
      ['data.bin', 70_000],
      ['notes.txt', 13],
    ]);
    // The worker delivers bob's copy like any other send.
    const copy = await waitFor(
      async () =>
        (
          await q`select * from message where mailbox_id = ${bob.mailboxId} and internet_message_id = ${info.messageId}`
        )[0],
      10_000,
      'local copy',
    );
    expect(copy).toMatchObject({
      direction: 'inbound',
      subject: 'Grüße über SMTP',
      attachment_count: 2,
      bcc_addresses: [],
    });
    // The sender reads its copy through the API like an HTTP send, raw source included.
    const detail = await server.api(alice.token).get(`/api/messages/${messageId}`);
    expect(detail.body.data.rawContentPath).toBe(`/api/messages/${messageId}/raw`);
  });

  it('accepts a From of an active alias identity and records it as the sender', async () => {
    const client = submitter(server, alice.address, alice.token);
    const info = await client.sendMail({
      envelope: { from: `sales@${x.name}`, to: [bob.address] },
      from: `Sales <sales@${x.name}>`,
      to: bob.address,
      subject: 'From the alias',
      text: 'x',
    });
    client.close();
    const messageId = /Queued as (msg_\w+)/.exec(info.response)![1]!;
    const [row] = await q`select from_address, from_display_name, mailbox_id from message where id = ${messageId}`;
    expect(row).toEqual({ from_address: `sales@${x.name}`, from_display_name: 'Sales', mailbox_id: alice.mailboxId });
  });

  it('lets the envelope decide the recipients; header-only addresses are not delivered', async () => {
    const client = submitter(server, alice.address, alice.token);
    const info = await client.sendMail({
      envelope: { from: alice.address, to: [bob.address] },
      from: alice.address,
      to: [bob.address, 'not-in-envelope@remote.example'],
      subject: 'Envelope wins',
      text: 'x',
    });
    client.close();
    const messageId = /Queued as (msg_\w+)/.exec(info.response)![1]!;
    const recipients = await q`select address from message_recipient where message_id = ${messageId}`;
    expect(recipients.map((r) => r.address)).toEqual([bob.address]);
  });

  it('threads a reply sent over SMTP into the thread it answers', async () => {
    const first = await server
      .api(alice.token)
      .post('/api/messages/send', sendBody('someone@remote.example', { subject: 'Topic' }));
    const [parent] =
      await q`select internet_message_id, thread_id from message where id = ${first.body.data.messageId}`;
    const client = submitter(server, alice.address, alice.token);
    const info = await client.sendMail({
      from: alice.address,
      to: 'someone@remote.example',
      subject: 'Re: Topic',
      text: 'follow-up',
      inReplyTo: parent.internet_message_id,
      references: [parent.internet_message_id],
    });
    client.close();
    const messageId = /Queued as (msg_\w+)/.exec(info.response)![1]!;
    const [row] = await q`select thread_id, in_reply_to_message_id from message where id = ${messageId}`;
    expect(row).toEqual({ thread_id: parent.thread_id, in_reply_to_message_id: first.body.data.messageId });
  });

  it('pipelines several messages on one authenticated connection', async () => {
    const wire = await SmtpWire.connect(submissionPort(server));
    expect((await wire.login(alice.address, alice.token)).code).toBe(235);
    for (let i = 0; i < 3; i++) {
      wire.write(`MAIL FROM:<${alice.address}>\r\nRCPT TO:<${bob.address}>\r\nDATA\r\n`);
      await wire.expect('250 2.1.0');
      await wire.expect('250 2.1.5');
      await wire.expect(354);
      wire.write(`${rfc5322({ from: alice.address, to: bob.address, subject: `pipelined ${i}` })}.\r\n`);
      await wire.expect('250 2.0.0 Queued as msg_');
    }
    await wire.cmd('QUIT', 221);
    wire.close();
    const rows =
      await q`select subject from message where mailbox_id = ${alice.mailboxId} and subject like 'pipelined %'`;
    expect(rows).toHaveLength(3);
  });
  it('stores the raw message whole on both sides of the in-transaction size (512 KiB): held, and streamed', async () => {
    for (const size of [10_000, 2_000_000]) {
      const client = submitter(server, alice.address, alice.token);
      const info = await client.sendMail({
        from: alice.address,
        to: 'raw-size@remote.example',
        subject: `raw ${size}`,
        text: 'x'.repeat(size),
      });
      client.close();
      const messageId = /Queued as (msg_\w+)/.exec(info.response)![1]!;
      const [row] = await q`select raw_blob_key, stored_bytes from message where id = ${messageId}`;
      const raw = await server.runtime.services.blobs.get(row.raw_blob_key);
      expect(raw.length).toBeGreaterThan(size);
      expect(raw.toString('latin1')).toContain(`Subject: raw ${size}`);
      expect(Number(row.stored_bytes)).toBeGreaterThanOrEqual(raw.length);
    }
  });
});
