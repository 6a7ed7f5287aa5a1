import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintMailboxToken, seedMessage, twoTenants, type Seeded, type Tenants } from '../support/seed-messages.js';

let server: TestServer;
let t: Tenants;
let inbound: Seeded;
let outbound: Seeded;
let reply: Seeded;
let deleted: Seeded;
let a2msg: Seeded;
let b1msg: Seeded;
beforeAll(async () => {
  server = await startTestServer();
  t = await twoTenants(server);
  const at = Date.now() - 60_000;
  inbound = await seedMessage(server, {
    mailboxId: t.a1.mailboxId,
    subject: 'Plans',
    fromAddress: 'ann@remote.test',
    fromDisplayName: 'Ann',
    to: [t.a1.address, 'other@remote.test'],
    cc: ['cc@remote.test'],
    bcc: ['hidden@remote.test'],
    bodyText: 'See attached.',
    bodyHtml: '<p>See attached.</p>',
    rawBlobKey: 'raw/x',
    createdAt: new Date(at),
    attachments: [
      { filename: 'plan.pdf', contentType: 'application/pdf', sizeBytes: 1234 },
      { filename: 'b.txt', contentType: 'text/plain', sizeBytes: 5 },
    ],
  });
  outbound = await seedMessage(server, {
    mailboxId: t.a1.mailboxId,
    direction: 'outbound',
    threadId: inbound.threadId,
    subject: 'Re: Plans',
    to: ['ann@remote.test'],
    bcc: ['boss@remote.test'],
    inReplyToMessageId: inbound.messageId,
    createdAt: new Date(at + 1000),
    deliveryStatus: 'deferred',
    recipients: [
      {
        address: 'boss@remote.test',
        kind: 'bcc',
        status: 'delivered',
        attempts: 1,
        remoteReply: '250 ok',
        deliveredAt: new Date(at + 2000),
      },
      { address: 'ann@remote.test', kind: 'to', status: 'deferred', attempts: 2, remoteReply: '451 try later' },
    ],
  });
  deleted = await seedMessage(server, {
    mailboxId: t.a1.mailboxId,
    threadId: inbound.threadId,
    createdAt: new Date(at + 1500),
    deletedAt: new Date(),
  });
  reply = await seedMessage(server, {
    mailboxId: t.a1.mailboxId,
    threadId: inbound.threadId,
    subject: 'Re: Re: Plans',
    createdAt: new Date(at + 3000),
  });
  a2msg = await seedMessage(server, { mailboxId: t.a2.mailboxId, subject: 'a2' });
  b1msg = await seedMessage(server, { mailboxId: t.b1.mailboxId, subject: 'b1' });
});
afterAll(async () => {
  await server?.close();
});

describe('GET /api/messages/:messageId', () => {
  it('returns the inbound detail without Bcc and without deliveries', async () => {
    const res = await server.api(t.a1.token).get(`/api/messages/${inbound.messageId}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      messageId: inbound.messageId,
      receiptId: inbound.messageId,
      threadId: inbound.threadId,
      mailboxId: t.a1.mailboxId,
      direction: 'inbound',
      subject: 'Plans',
      snippet: 'See attached.',
      fromAddress: 'ann@remote.test',
      fromDisplayName: 'Ann',
      toAddress: t.a1.address,
      mailboxAddress: t.a1.address,
      attachmentCount: 2,
      isRead: false,
      readAtTs: null,
      createdAtTs: inbound.createdAt.getTime(),
      receivedAtTs: inbound.createdAt.getTime(),
      sentAtTs: null,
      // Seeded without arrival verdicts, so it reads as internal mail (only port-25 mail has them).
      origin: 'internal',
      authenticated: true,
      authentication: null,
      approvalStatus: null,
      toAddresses: [t.a1.address, 'other@remote.test'],
      ccAddresses: ['cc@remote.test'],
      bccAddresses: [],
      bodyText: 'See attached.',
      bodyHtml: '<p>See attached.</p>',
      bodyFormat: 'text+html',
      rawContentPath: `/api/messages/${inbound.messageId}/raw`,
      inReplyToMessageId: null,
      attachments: [
        {
          attachmentId: expect.stringMatching(/^att_/),
          filename: 'plan.pdf',
          contentType: 'application/pdf',
          sizeBytes: 1234,
          contentId: null,
          disposition: 'attachment',
        },
        {
          attachmentId: expect.stringMatching(/^att_/),
          filename: 'b.txt',
          contentType: 'text/plain',
          sizeBytes: 5,
          contentId: null,
          disposition: 'attachment',
        },
      ],
      deliveryStatus: null,
      deliveries: [],
      // Seeded straight into storage, so never through ingest: nothing was extracted or screened.
      extracted: null,
      screening: null,
      // Scheduled sends only (docs/workflow.md): an inbound message has neither.
      status: null,
      sendAtTs: null,
    });
    expect(JSON.stringify(res.body.data)).not.toContain('hidden@remote.test');
  });

  it('returns the outbound detail with its own Bcc, delivery status and per-recipient deliveries', async () => {
    const res = await server.api(t.a1.token).get(`/api/messages/${outbound.messageId}`);
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d).toMatchObject({
      direction: 'outbound',
      bccAddresses: ['boss@remote.test'],
      deliveryStatus: 'deferred',
      rawContentPath: null,
      inReplyToMessageId: inbound.messageId,
      bodyFormat: 'text',
      bodyHtml: null,
      attachments: [],
      sentAtTs: outbound.createdAt.getTime(),
    });
    expect(d.deliveries).toEqual([
      {
        address: 'ann@remote.test',
        kind: 'to',
        status: 'deferred',
        remoteReply: '451 try later',
        attempts: 2,
        updatedAtTs: outbound.createdAt.getTime(),
        deliveredAtTs: null,
      },
      {
        address: 'boss@remote.test',
        kind: 'bcc',
        status: 'delivered',
        remoteReply: '250 ok',
        attempts: 1,
        updatedAtTs: outbound.createdAt.getTime(),
        deliveredAtTs: outbound.createdAt.getTime() + 1000,
      },
    ]);
  });

  it('lets a domain token read with or without mailboxAddress', async () => {
    const api = server.api(t.domA.token);
    expect((await api.get(`/api/messages/${inbound.messageId}`)).status).toBe(200);
    expect((await api.get(`/api/messages/${inbound.messageId}?mailboxAddress=${t.a1.address}`)).status).toBe(200);
    // The id exists in the domain, but not in the mailbox named.
    expect((await api.get(`/api/messages/${inbound.messageId}?mailboxAddress=${t.a2.address}`)).status).toBe(404);
  });

  it('answers 404 for a soft-deleted, unknown, cross-mailbox or cross-domain message', async () => {
    const a1 = server.api(t.a1.token);
    for (const id of [deleted.messageId, 'msg_unknown', a2msg.messageId, b1msg.messageId]) {
      const res = await a1.get(`/api/messages/${id}`);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ data: null, code: 404 });
    }
    expect((await server.api(t.domA.token).get(`/api/messages/${b1msg.messageId}`)).status).toBe(404);
    expect((await server.api(t.domB.token).get(`/api/messages/${inbound.messageId}`)).status).toBe(404);
  });

  it('answers 400 for a bad or foreign mailboxAddress, 401 without token, 403 without MailboxRead', async () => {
    const path = `/api/messages/${inbound.messageId}`;
    expect((await server.api(t.a1.token).get(`${path}?mailboxAddress=nope`)).status).toBe(400);
    expect((await server.api(t.a1.token).get(`${path}?mailboxAddress=${t.a2.address}`)).status).toBe(400);
    expect((await server.api().get(path)).status).toBe(401);
    expect((await server.api(await mintMailboxToken(server, t.a1.mailboxId, ['MailboxDelete'])).get(path)).status).toBe(
      403,
    );
  });
});

describe('MessageService.rawContentLocation (what rawContentPath serves)', () => {
  const locate = async (token: string, messageId: string) => {
    const { tokenAuth, messages } = server.runtime.services;
    return messages.rawContentLocation(await tokenAuth.authenticate(token, null), { messageId });
  };

  it('names the blob of a visible message that kept its raw source', async () => {
    expect(await locate(t.a1.token, inbound.messageId)).toEqual({ messageId: inbound.messageId, blobKey: 'raw/x' });
    expect(await locate(t.domA.token, inbound.messageId)).toEqual({ messageId: inbound.messageId, blobKey: 'raw/x' });
  });

  it('is a 404 without raw source, across tenants, and for deleted messages', async () => {
    await expect(locate(t.a1.token, outbound.messageId)).rejects.toMatchObject({ status: 404 });
    await expect(locate(t.a2.token, inbound.messageId)).rejects.toMatchObject({ status: 404 });
    await expect(locate(t.domB.token, inbound.messageId)).rejects.toMatchObject({ status: 404 });
    await expect(locate(t.a1.token, deleted.messageId)).rejects.toMatchObject({ status: 404 });
  });
});

describe('GET /api/threads/:threadId', () => {
  it('returns the thread with its live messages oldest first, each in the detail shape', async () => {
    const res = await server.api(t.a1.token).get(`/api/threads/${inbound.threadId}`);
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d).toMatchObject({
      threadId: inbound.threadId,
      mailboxId: t.a1.mailboxId,
      subject: 'Plans',
      createdAtTs: inbound.createdAt.getTime(),
    });
    expect(d.messages.map((m: any) => m.messageId)).toEqual([inbound.messageId, outbound.messageId, reply.messageId]);
    const detail = (await server.api(t.a1.token).get(`/api/messages/${outbound.messageId}`)).body.data;
    expect(d.messages[1]).toEqual(detail);
    expect(d.messages[0].attachments).toHaveLength(2);
    expect(d.messages[0].bccAddresses).toEqual([]);
  });

  it('is visible to the domain token, with or without the right mailboxAddress', async () => {
    const api = server.api(t.domA.token);
    expect((await api.get(`/api/threads/${inbound.threadId}`)).status).toBe(200);
    expect((await api.get(`/api/threads/${inbound.threadId}?mailboxAddress=${t.a1.address}`)).status).toBe(200);
    expect((await api.get(`/api/threads/${inbound.threadId}?mailboxAddress=${t.a2.address}`)).status).toBe(404);
  });

  it('answers 404 across mailboxes and domains, for unknown ids, and when every message is deleted', async () => {
    expect((await server.api(t.a2.token).get(`/api/threads/${inbound.threadId}`)).status).toBe(404);
    expect((await server.api(t.b1.token).get(`/api/threads/${inbound.threadId}`)).status).toBe(404);
    expect((await server.api(t.domB.token).get(`/api/threads/${inbound.threadId}`)).status).toBe(404);
    expect((await server.api(t.a1.token).get('/api/threads/thr_unknown')).status).toBe(404);
    expect((await server.api(t.a1.token).get(`/api/threads/${deleted.threadId}`)).status).toBe(200);
    const lone = await seedMessage(server, { mailboxId: t.a1.mailboxId, deletedAt: new Date() });
    expect((await server.api(t.a1.token).get(`/api/threads/${lone.threadId}`)).status).toBe(404);
  });

  it('answers 401 and 403 like the other reads', async () => {
    expect((await server.api().get(`/api/threads/${inbound.threadId}`)).status).toBe(401);
    const noRead = await mintMailboxToken(server, t.a1.mailboxId, ['MailboxSend']);
    expect((await server.api(noRead).get(`/api/threads/${inbound.threadId}`)).status).toBe(403);
  });
});
