import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { seedAttachment } from '../support/seed-attachment.js';
import { rowsOf, twoMailboxes, waitFor } from './helpers.js';
import { mcpClient, fails, ok } from '../mcp/helpers.js';

// docs/workflow.md, "Forward": a new message in a new thread, the original below the note, and a
// copy of each of the original's attachments that the recipient can download.

let server: TestServer;
const q = rowsOf(() => server);
const clients: Client[] = [];
const PDF = Buffer.from('%PDF-1.4 forwarded bytes');

beforeAll(async () => {
  // The worker delivers the forward locally, so the recipient's copy and its attachment can be read.
  server = await startTestServer({ roles: ['api', 'worker'] });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.close();
});

async function original() {
  const { domain, a, b } = await twoMailboxes(server);
  const seeded = await seedAttachment(server, a, {
    filename: 'Invoice.pdf',
    contentType: 'application/pdf',
    bytes: PDF,
  });
  await q`update message set subject = 'Re: Invoice', from_address = 'carol@peer.example', body_text = 'Please pay.' where id = ${seeded.messageId}`;
  const [row] = await q`select thread_id from message where id = ${seeded.messageId}`;
  return { domain, a, b, messageId: seeded.messageId, threadId: row.thread_id as string };
}

/** b's copy of the forward, once local delivery wrote it, and its one attachment's bytes. */
async function receivedBy(b: { mailboxId: string; token: string }, subject: string) {
  const [copy] = await waitFor(
    () =>
      q`select id from message where mailbox_id = ${b.mailboxId} and direction = 'inbound' and subject = ${subject}`.then(
        (r) => r.length > 0 && r,
      ),
    10_000,
    'the forward in the recipient mailbox',
  );
  const detail = await server.api(b.token).get(`/api/messages/${copy.id}`);
  expect(detail.body.data.attachments).toHaveLength(1);
  const att = detail.body.data.attachments[0];
  expect(att).toMatchObject({ filename: 'Invoice.pdf', contentType: 'application/pdf' });
  const download = await fetch(`${server.url}/api/messages/${copy.id}/attachments/${att.attachmentId}`, {
    headers: { authorization: `Bearer ${b.token}` },
  });
  return { detail: detail.body.data, bytes: Buffer.from(await download.arrayBuffer()) };
}

describe('forward', () => {
  it('HTTP: queues a new message in a new thread with the note, the original and its attachments', async () => {
    const o = await original();
    const res = await server
      .api(o.a.token)
      .post(`/api/messages/${o.messageId}/forward`, { toAddress: o.b.address, bodyText: 'See below.' });
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ status: 'queued' });
    expect(res.body.data.threadId).not.toBe(o.threadId);
    const [row] =
      await q`select subject, body_text, attachment_count, in_reply_to_message_id, stored_bytes from message where id = ${res.body.data.messageId}`;
    expect(row).toMatchObject({ subject: 'Fwd: Invoice', attachment_count: 1, in_reply_to_message_id: null });
    expect(row.body_text).toMatch(
      /^See below\.\n\n---------- Forwarded message ---------\nFrom: carol@peer\.example\n/,
    );
    expect(row.body_text).toMatch(/\nSubject: Re: Invoice\n[^]*\n\nPlease pay\.$/);
    // The copy costs the sender's quota like any attachment it sends.
    expect(Number(row.stored_bytes)).toBeGreaterThanOrEqual(PDF.length);
    const got = await receivedBy(o.b, 'Fwd: Invoice');
    expect(got.bytes.equals(PDF)).toBe(true);
    expect(got.detail.bodyText).toContain('Please pay.');
  });

  it('MCP forward_message: the same forward, with a given subject', async () => {
    const o = await original();
    const client = await mcpClient(server, o.a.token);
    clients.push(client);
    const result = await ok(client, 'forward_message', {
      messageId: o.messageId,
      toAddress: [o.b.address],
      subject: 'For your records',
    });
    expect(result.threadId).not.toBe(o.threadId);
    const [row] = await q`select subject, body_text, attachment_count from message where id = ${result.messageId}`;
    expect(row).toMatchObject({ subject: 'For your records', attachment_count: 1 });
    expect(row.body_text).toMatch(/^---------- Forwarded message ---------\n/);
    expect((await receivedBy(o.b, 'For your records')).bytes.equals(PDF)).toBe(true);
  });

  it('answers 404 for a message the caller cannot see and 400 for another mailbox named by a domain token', async () => {
    const o = await original();
    const hidden = await server
      .api(o.b.token)
      .post(`/api/messages/${o.messageId}/forward`, { toAddress: 'x@peer.example' });
    expect(hidden.status).toBe(404);
    const other = await server
      .api(o.domain.token)
      .post(`/api/messages/${o.messageId}/forward`, { mailboxAddress: o.b.address, toAddress: 'x@peer.example' });
    expect(other.status).toBe(400);
    const missingTo = await server.api(o.a.token).post(`/api/messages/${o.messageId}/forward`, { bodyText: 'x' });
    expect(missingTo.status).toBe(400);
    const client = await mcpClient(server, o.b.token);
    clients.push(client);
    expect(
      await fails(client, 'forward_message', { messageId: o.messageId, toAddress: 'x@peer.example' }),
    ).toMatchObject({ code: 404 });
  });
});
