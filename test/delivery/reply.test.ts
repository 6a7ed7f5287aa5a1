import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { rowsOf, sendBody, twoMailboxes } from './helpers.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});
const q = rowsOf(() => server);

const inboundInto = (mailboxId: string, extra: Record<string, unknown> = {}) =>
  server.runtime.services.inbound.store(undefined, {
    mailboxId,
    from: 'carol@external.example',
    fromDisplayName: 'Carol',
    to: ['someone@example.test'],
    subject: 'Re: RE: Lunch?',
    bodyText: 'Are you free?',
    bodyHtml: null,
    internetMessageId: '<lunch-1@external.example>',
    inReplyTo: null,
    references: [],
    receivedAt: new Date(),
    ...extra,
  });

describe('POST /api/messages/{messageId}/reply', () => {
  it('replies to an outbound message in its thread, to its To, with "Re:" and References', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const sent = await api.post(
      '/api/messages/send',
      sendBody(['x@external.example', 'y@external.example'], { ccAddresses: ['z@external.example'] }),
    );
    const reply = await api.post(`/api/messages/${sent.body.data.messageId}/reply`, { bodyText: 'Following up' });
    expect(reply.status).toBe(202);
    expect(reply.body.data).toMatchObject({ threadId: sent.body.data.threadId, status: 'queued' });
    const [parent] = await q`select internet_message_id from message where id = ${sent.body.data.messageId}`;
    const [row] = await q`select * from message where id = ${reply.body.data.messageId}`;
    expect(row).toMatchObject({
      thread_id: sent.body.data.threadId,
      subject: 'Re: Hello',
      to_addresses: ['x@external.example', 'y@external.example'],
      cc_addresses: [],
      in_reply_to_message_id: sent.body.data.messageId,
      references_header: [parent.internet_message_id],
      direction: 'outbound',
    });
    const [thread] = await q`select last_message_at from thread where id = ${sent.body.data.threadId}`;
    expect(new Date(thread.last_message_at).getTime()).toBe(reply.body.data.queuedAtTs);
  });

  it('replies to an inbound message to its sender, without stacking "Re:", and chains References', async () => {
    const { a } = await twoMailboxes(server);
    const stored = await inboundInto(a.mailboxId, {
      references: ['<root@external.example>'],
      inReplyTo: '<root@external.example>',
    });
    const reply = await server.api(a.token).post(`/api/messages/${stored.messageId}/reply`, { bodyText: 'Yes!' });
    expect(reply.status).toBe(202);
    expect(reply.body.data.threadId).toBe(stored.threadId);
    const [row] =
      await q`select subject, to_addresses, references_header, in_reply_to_message_id from message where id = ${reply.body.data.messageId}`;
    expect(row).toEqual({
      subject: 'Re: Lunch?',
      to_addresses: ['carol@external.example'],
      in_reply_to_message_id: stored.messageId,
      references_header: ['<root@external.example>', '<lunch-1@external.example>'],
    });
  });

  it('takes an explicit subject (with one "Re: "), toAddress and cc', async () => {
    const { a } = await twoMailboxes(server);
    const stored = await inboundInto(a.mailboxId);
    const reply = await server.api(a.token).post(`/api/messages/${stored.messageId}/reply`, {
      subject: 'Different',
      toAddress: 'other@external.example',
      ccAddresses: ['carol@external.example'],
      bodyText: 'x',
    });
    expect(reply.status).toBe(202);
    const [row] =
      await q`select subject, to_addresses, cc_addresses from message where id = ${reply.body.data.messageId}`;
    expect(row).toEqual({
      subject: 'Re: Different',
      to_addresses: ['other@external.example'],
      cc_addresses: ['carol@external.example'],
    });
  });

  it("asks for toAddress when the parent's sender is not a deliverable address", async () => {
    const { a } = await twoMailboxes(server);
    const stored = await inboundInto(a.mailboxId, { from: 'MAILER-DAEMON' });
    const res = await server.api(a.token).post(`/api/messages/${stored.messageId}/reply`, { bodyText: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.errMsg).toMatch(/toAddress/);
    const explicit = await server
      .api(a.token)
      .post(`/api/messages/${stored.messageId}/reply`, { toAddress: 'postmaster@external.example', bodyText: 'x' });
    expect(explicit.status).toBe(202);
  });

  it("refuses a mailboxAddress other than the parent's mailbox with 400 REPLY_MAILBOX_MISMATCH", async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const stored = await inboundInto(a.mailboxId);
    const res = await server
      .api(domain.token)
      .post(`/api/messages/${stored.messageId}/reply`, { mailboxAddress: b.address, bodyText: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.errMsg).toMatch(/parent message/);
    const ok = await server
      .api(domain.token)
      .post(`/api/messages/${stored.messageId}/reply`, { mailboxAddress: a.address, bodyText: 'x' });
    expect(ok.status).toBe(202);
    const missing = await server.api(domain.token).post(`/api/messages/${stored.messageId}/reply`, { bodyText: 'x' });
    expect(missing.status).toBe(400);
    const ownTokenOtherMailbox = await server
      .api(a.token)
      .post(`/api/messages/${stored.messageId}/reply`, { mailboxAddress: b.address, bodyText: 'x' });
    expect(ownTokenOtherMailbox.status).toBe(400);
  });

  it('answers 404 for a parent the token cannot see, an unknown id, or a deleted parent', async () => {
    const { a, b } = await twoMailboxes(server);
    const stored = await inboundInto(a.mailboxId);
    const other = await server.api(b.token).post(`/api/messages/${stored.messageId}/reply`, { bodyText: 'x' });
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ data: null, code: 404 });
    const foreign = await server.createDomain();
    const cross = await server
      .api(foreign.token)
      .post(`/api/messages/${stored.messageId}/reply`, { mailboxAddress: a.address, bodyText: 'x' });
    expect(cross.status).toBe(404);
    expect((await server.api(a.token).post('/api/messages/msg_doesnotexist/reply', { bodyText: 'x' })).status).toBe(
      404,
    );
    await q`update message set deleted_at = now() where id = ${stored.messageId}`;
    expect((await server.api(a.token).post(`/api/messages/${stored.messageId}/reply`, { bodyText: 'x' })).status).toBe(
      404,
    );
  });
});
