import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock, seedMessage } from '../support/tenants.js';
import { mailboxTokenWith, rowsOf, sendBody, twoMailboxes } from '../delivery/helpers.js';
import { StorageSweeper } from '../../src/core/flows/housekeeping/storage-sweeper.js';
import { MailboxExpirySweeper } from '../../src/core/flows/housekeeping/mailbox-expiry.js';

// Drafts over HTTP (docs/workflow.md, "Drafts"): create, list (paged like messages), read,
// change, delete, and the send through the one send path. Time moves with the injected clock.

let clock: ManualClock;
let server: TestServer;
const q = rowsOf(() => server);
const HOUR = 3_600_000;

beforeAll(async () => {
  clock = new ManualClock();
  server = await startTestServer({ clock, env: { SEND_RATE_LIMIT_PER_MINUTE: '1000' } });
}, 180_000);
afterAll(async () => {
  await server?.close();
});

async function upload(token: string, name = 'notes.txt'): Promise<string> {
  const form = new FormData();
  form.set('file', new Blob(['some notes']), name);
  const res = await server.api(token).raw('/api/messages/attachments', { method: 'POST', body: form });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.attachmentUploadId;
}

const eventsOf = async (token: string) =>
  (await server.api(token).get('/api/events?limit=200')).body.data.items as { type: string; data: any }[];

describe('a draft: create, read, change, delete', () => {
  it('is saved incomplete (201), read back, and announced with draft.created', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const created = await api.post('/api/drafts', { subject: 'Quarterly numbers' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const draft = created.body.data;
    expect(draft).toMatchObject({
      draftId: expect.stringMatching(/^drf_/),
      mailboxId: a.mailboxId,
      mailboxAddress: a.address,
      toAddress: [],
      ccAddresses: [],
      bccAddresses: [],
      subject: 'Quarterly numbers',
      bodyText: null,
      bodyHtml: null,
      snippet: '',
      attachmentIds: [],
      attachments: [],
      parentMessageId: null,
      replyAll: false,
      sendAtTs: null,
      cancelOnReply: false,
      createdByTokenId: a.tokenId,
    });
    expect((await api.get(`/api/drafts/${draft.draftId}`)).body.data).toEqual(draft);
    const event = (await eventsOf(a.token)).find((e) => e.type === 'draft.created');
    expect(event?.data).toMatchObject({ draftId: draft.draftId, subject: 'Quarterly numbers', snippet: '' });
    expect(event?.data).not.toHaveProperty('bodyText');
  });

  it('PATCH keeps absent fields, clears with null, replaces lists; unknown keys are refused', async () => {
    const { a, b } = await twoMailboxes(server);
    const api = server.api(a.token);
    const { draftId } = (
      await api.post('/api/drafts', {
        toAddress: b.address,
        ccAddresses: ['c1@peer.example', 'c2@peer.example'],
        subject: 'Hello',
        bodyText: 'First words of the body',
      })
    ).body.data;
    clock.advance(1_000);
    const patched = await api.patch(`/api/drafts/${draftId}`, { subject: null, ccAddresses: ['c3@peer.example'] });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.data).toMatchObject({
      toAddress: [b.address],
      ccAddresses: ['c3@peer.example'],
      subject: null,
      bodyText: 'First words of the body',
      snippet: 'First words of the body',
    });
    expect(patched.body.data.updatedAtTs).toBe(patched.body.data.createdAtTs + 1_000);
    const unknown = await api.patch(`/api/drafts/${draftId}`, { subjct: 'typo' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ errorCode: 'VALIDATION_FAILED', errMsg: 'subjct: unknown key' });
    const bad = await api.patch(`/api/drafts/${draftId}`, { toAddress: ['not an address'] });
    expect(bad.status).toBe(400);
    expect(bad.body.errMsg).toMatch(/^toAddress/);
    expect((await eventsOf(a.token)).filter((e) => e.type === 'draft.updated')).toHaveLength(1);
  });

  it('DELETE removes it (200), a second DELETE and a GET are 404; draft.deleted says why', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const { draftId } = (await api.post('/api/drafts', { bodyText: 'discard me' })).body.data;
    const deleted = await api.delete(`/api/drafts/${draftId}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toEqual({ draftId, deleted: true });
    expect((await api.delete(`/api/drafts/${draftId}`)).status).toBe(404);
    expect((await api.get(`/api/drafts/${draftId}`)).status).toBe(404);
    const event = (await eventsOf(a.token)).find((e) => e.type === 'draft.deleted');
    expect(event?.data).toEqual({ draftId, reason: 'deleted', messageId: null });
  });

  it('reading needs MailboxRead, writing MailboxSend', async () => {
    const { a } = await twoMailboxes(server);
    const { draftId } = (await server.api(a.token).post('/api/drafts', { subject: 's' })).body.data;
    const reader = server.api(await mailboxTokenWith(server, a.mailboxId, ['MailboxRead']));
    expect((await reader.get('/api/drafts')).status).toBe(200);
    expect((await reader.get(`/api/drafts/${draftId}`)).status).toBe(200);
    for (const res of [
      await reader.post('/api/drafts', { subject: 'x' }),
      await reader.patch(`/api/drafts/${draftId}`, { subject: 'x' }),
      await reader.delete(`/api/drafts/${draftId}`),
      await reader.post(`/api/drafts/${draftId}/send`),
    ])
      expect(res.body).toMatchObject({ code: 403, errorCode: 'SCOPE_MISSING' });
    const sender = server.api(await mailboxTokenWith(server, a.mailboxId, ['MailboxSend']));
    expect((await sender.get('/api/drafts')).status).toBe(403);
  });
});

describe('the list', () => {
  it('is paged like messages: newest first, nextCursor, totalCount; the cursor is bound to its mailbox', async () => {
    const { a, b } = await twoMailboxes(server);
    const api = server.api(a.token);
    const ids: string[] = [];
    for (const subject of ['one', 'two', 'three']) {
      ids.push((await api.post('/api/drafts', { subject, bodyText: `body of ${subject}` })).body.data.draftId);
      clock.advance(10);
    }
    const first = await api.get('/api/drafts?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.totalCount).toBe(3);
    expect(first.body.data.items.map((d: any) => d.subject)).toEqual(['three', 'two']);
    expect(first.body.data.items[0]).not.toHaveProperty('bodyText');
    expect(first.body.data.items[0].snippet).toBe('body of three');
    const cursor = first.body.data.nextCursor;
    expect(cursor).toEqual(expect.any(String));
    const second = await api.get(`/api/drafts?limit=2&cursor=${encodeURIComponent(cursor)}`);
    expect(second.body.data.items.map((d: any) => d.draftId)).toEqual([ids[0]]);
    expect(second.body.data.nextCursor).toBeNull();
    // An edit does not move a draft: paging never skips or repeats one.
    await api.patch(`/api/drafts/${ids[0]}`, { subject: 'one, edited' });
    expect((await api.get('/api/drafts?limit=2')).body.data.items.map((d: any) => d.subject)).toEqual(['three', 'two']);
    const elsewhere = await server.api(b.token).get(`/api/drafts?limit=2&cursor=${encodeURIComponent(cursor)}`);
    expect(elsewhere.body).toMatchObject({ code: 400, errorCode: 'CURSOR_INVALID' });
    expect((await api.get('/api/drafts?limit=201')).status).toBe(400);
  });
});

describe('tenant isolation', () => {
  it('the list carries an ETag: If-None-Match answers 304 until a draft changes', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const draftId = (await api.post('/api/drafts', { subject: 'first' })).body.data.draftId as string;
    const first = await api.get('/api/drafts');
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^W\/"cm1\./);
    const unchanged = await api.get('/api/drafts', { 'if-none-match': etag });
    expect(unchanged.status).toBe(304);
    expect(unchanged.body).toBeNull();
    // Each kind of write moves the mark: an edit, a new draft, a delete.
    const writes = [
      () => api.patch(`/api/drafts/${draftId}`, { subject: 'edited' }),
      () => api.post('/api/drafts', { subject: 'second' }),
      () => api.delete(`/api/drafts/${draftId}`),
    ];
    let held = etag;
    for (const write of writes) {
      expect((await write()).status).toBeLessThan(300);
      const next = await api.get('/api/drafts', { 'if-none-match': held });
      expect(next.status).toBe(200);
      expect(next.headers.get('etag')).not.toBe(held);
      held = next.headers.get('etag')!;
    }
    expect((await api.get('/api/drafts', { 'if-none-match': held })).body).toBeNull();
    // Another page of the same list is another read with its own mark.
    expect((await api.get('/api/drafts?limit=1', { 'if-none-match': held })).status).toBe(200);
  });

  it("another mailbox's token, and another domain's token, get 404 for a draft by id", async () => {
    const { a, b } = await twoMailboxes(server);
    const other = await twoMailboxes(server);
    const { draftId } = (await server.api(a.token).post('/api/drafts', { toAddress: b.address, bodyText: 'x' })).body
      .data;
    for (const token of [b.token, other.a.token, other.domain.token]) {
      const api = server.api(token);
      for (const res of [
        await api.get(`/api/drafts/${draftId}`),
        await api.patch(`/api/drafts/${draftId}`, { subject: 'mine now' }),
        await api.post(`/api/drafts/${draftId}/send`),
        await api.delete(`/api/drafts/${draftId}`),
      ])
        expect(res.body).toMatchObject({ code: 404, errorCode: 'NOT_FOUND', errMsg: 'Draft not found.' });
    }
    // Lists show each mailbox only its own; naming another mailbox is the 400 of every list.
    expect((await server.api(b.token).get('/api/drafts')).body.data.totalCount).toBe(0);
    const naming = await server.api(b.token).get(`/api/drafts?mailboxAddress=${encodeURIComponent(a.address)}`);
    expect(naming.body).toMatchObject({ code: 400, errorCode: 'MAILBOX_ADDRESS_FORBIDDEN' });
    expect((await server.api(a.token).get(`/api/drafts/${draftId}`)).body.data.subject).toBeNull();
  });

  it('a domain token names the mailbox to create and list; by id it may omit it, and a wrong one is 400', async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const api = server.api(domain.token);
    const missing = await api.post('/api/drafts', { subject: 'x' });
    expect(missing.body).toMatchObject({ code: 400, errorCode: 'MAILBOX_ADDRESS_REQUIRED' });
    const created = await api.post('/api/drafts', { mailboxAddress: a.address, toAddress: b.address, bodyText: 'hi' });
    expect(created.status).toBe(201);
    const { draftId } = created.body.data;
    expect(created.body.data.mailboxId).toBe(a.mailboxId);
    expect((await api.get(`/api/drafts?mailboxAddress=${a.address}`)).body.data.items).toHaveLength(1);
    expect((await api.get(`/api/drafts?mailboxAddress=${b.address}`)).body.data.items).toHaveLength(0);
    expect((await api.get('/api/drafts')).body).toMatchObject({ code: 400, errorCode: 'MAILBOX_ADDRESS_REQUIRED' });
    expect((await api.get(`/api/drafts/${draftId}`)).status).toBe(200);
    // A read naming another mailbox sees only that mailbox (404), a write naming it is TARGET_MAILBOX_MISMATCH.
    expect((await api.get(`/api/drafts/${draftId}?mailboxAddress=${b.address}`)).status).toBe(404);
    const wrong = await api.patch(`/api/drafts/${draftId}`, { mailboxAddress: b.address, subject: 'x' });
    expect(wrong.body).toMatchObject({ code: 400, errorCode: 'TARGET_MAILBOX_MISMATCH' });
    const wrongQuery = await api.post(`/api/drafts/${draftId}/send?mailboxAddress=${b.address}`);
    expect(wrongQuery.body).toMatchObject({ code: 400, errorCode: 'TARGET_MAILBOX_MISMATCH' });
    expect((await api.patch(`/api/drafts/${draftId}`, { mailboxAddress: a.address, subject: 'ok' })).status).toBe(200);
    const sent = await api.post(`/api/drafts/${draftId}/send`, { mailboxAddress: a.address });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const message = await server.api(a.token).get(`/api/messages/${sent.body.data.messageId}`);
    expect(message.body.data).toMatchObject({ mailboxId: a.mailboxId, subject: 'ok', toAddresses: [b.address] });
  });

  it("a reply draft's parent must be a live message of the draft's mailbox", async () => {
    const { a, b } = await twoMailboxes(server);
    const ofB = await seedMessage(server, b);
    const ofA = await seedMessage(server, a);
    const own = server.api(a.token);
    expect((await own.post('/api/drafts', { parentMessageId: ofB.messageId })).status).toBe(404);
    const domain = server.api((await twoMailboxes(server)).domain.token);
    expect((await domain.post('/api/drafts', { parentMessageId: ofA.messageId })).status).toBe(400);
    expect((await own.post('/api/drafts', { parentMessageId: ofA.messageId })).status).toBe(201);
  });
});

describe('sending a draft', () => {
  it('202 through the send path: the message holds the draft, the draft and its uploads move to it', async () => {
    const { a, b } = await twoMailboxes(server);
    const api = server.api(a.token);
    const upload1 = await upload(a.token, 'plan.txt');
    const { draftId } = (
      await api.post('/api/drafts', {
        toAddress: [b.address],
        ccAddresses: ['cc@peer.example'],
        subject: 'The plan',
        bodyText: 'Here it is.',
        bodyHtml: '<p>Here it is.</p>',
        attachmentIds: [upload1],
      })
    ).body.data;
    expect((await api.get(`/api/drafts/${draftId}`)).body.data.attachments).toEqual([
      { attachmentId: upload1, filename: 'plan.txt', contentType: expect.any(String), sizeBytes: 10 },
    ]);
    const sent = await api.post(`/api/drafts/${draftId}/send`);
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(sent.body.data).toMatchObject({ status: 'queued', messageId: expect.stringMatching(/^msg_/) });
    const message = (await api.get(`/api/messages/${sent.body.data.messageId}`)).body.data;
    expect(message).toMatchObject({
      direction: 'outbound',
      subject: 'The plan',
      toAddresses: [b.address],
      ccAddresses: ['cc@peer.example'],
      bodyText: 'Here it is.',
      bodyHtml: '<p>Here it is.</p>',
      attachmentCount: 1,
    });
    expect(message.attachments.map((x: any) => x.filename)).toEqual(['plan.txt']);
    expect((await api.get(`/api/drafts/${draftId}`)).status).toBe(404);
    expect((await api.get('/api/drafts')).body.data.totalCount).toBe(0);
    const event = (await eventsOf(a.token)).find((e) => e.type === 'draft.deleted');
    expect(event?.data).toEqual({ draftId, reason: 'sent', messageId: sent.body.data.messageId });
    // Sent: a second send has nothing to send.
    expect((await api.post(`/api/drafts/${draftId}/send`)).status).toBe(404);
  });

  it('a reply draft is sent as a reply: threaded, "Re: " subject, default recipients', async () => {
    const { a } = await twoMailboxes(server);
    const parent = await seedMessage(server, a, { subject: 'Order 42' });
    const api = server.api(a.token);
    const { draftId } = (await api.post('/api/drafts', { parentMessageId: parent.messageId, bodyText: 'Shipped.' }))
      .body.data;
    const sent = await api.post(`/api/drafts/${draftId}/send`);
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(sent.body.data.threadId).toBe(parent.threadId);
    const message = (await api.get(`/api/messages/${sent.body.data.messageId}`)).body.data;
    expect(message).toMatchObject({
      subject: 'Re: Order 42',
      toAddresses: ['sender@remote.example'],
      inReplyToMessageId: parent.messageId,
    });
  });

  it('an incomplete draft answers 400 naming the field, and stays', async () => {
    const { a, b } = await twoMailboxes(server);
    const api = server.api(a.token);
    const { draftId } = (await api.post('/api/drafts', { subject: 'no one yet', bodyText: 'x' })).body.data;
    const noRecipient = await api.post(`/api/drafts/${draftId}/send`);
    expect(noRecipient.body).toMatchObject({ code: 400, errorCode: 'VALIDATION_FAILED' });
    expect(noRecipient.body.errMsg).toMatch(/^toAddress: required \(the draft is kept/);
    await api.patch(`/api/drafts/${draftId}`, { toAddress: b.address, bodyText: null });
    const noBody = await api.post(`/api/drafts/${draftId}/send`);
    expect(noBody.body).toMatchObject({ code: 400, errorCode: 'VALIDATION_FAILED' });
    expect(noBody.body.errMsg).toMatch(/^bodyText: bodyText or bodyHtml is required/);
    expect((await api.get(`/api/drafts/${draftId}`)).status).toBe(200);
    expect((await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId}`)[0].n).toBe(0);
  });

  it('a send the policy refuses leaves the draft in place, and the refusal is audited', async () => {
    const { domain, a } = await twoMailboxes(server);
    const policy = await server
      .api(domain.token)
      .put(`/api/domain/mailboxes/${a.mailboxId}/policy`, { blockedRecipients: ['@blocked.example'] });
    expect(policy.status, JSON.stringify(policy.body)).toBe(200);
    const api = server.api(a.token);
    const { draftId } = (await api.post('/api/drafts', { toAddress: 'x@blocked.example', bodyText: 'hi' })).body.data;
    const refused = await api.post(`/api/drafts/${draftId}/send`);
    expect(refused.body).toMatchObject({ code: 403, errorCode: 'POLICY_RECIPIENT_REFUSED' });
    expect((await api.get(`/api/drafts/${draftId}`)).body.data.toAddress).toEqual(['x@blocked.example']);
    const audit = (await api.get('/api/mailbox/audit?limit=10')).body.data.items;
    expect(audit[0]).toMatchObject({ decision: 'refused', channel: 'http' });
    // Fixed, it goes.
    await api.patch(`/api/drafts/${draftId}`, { toAddress: 'x@allowed.example' });
    expect((await api.post(`/api/drafts/${draftId}/send`)).status).toBe(202);
    expect((await api.get(`/api/drafts/${draftId}`)).status).toBe(404);
  });

  it('held for approval counts as accepted: 202 pending_approval, the draft is gone', async () => {
    const { domain, a } = await twoMailboxes(server);
    await server.api(domain.token).put(`/api/domain/mailboxes/${a.mailboxId}/policy`, { approval: 'all' });
    const api = server.api(a.token);
    const { draftId } = (await api.post('/api/drafts', { toAddress: 'x@peer.example', bodyText: 'hi' })).body.data;
    const held = await api.post(`/api/drafts/${draftId}/send`);
    expect(held.status).toBe(202);
    expect(held.body.data.status).toBe('pending_approval');
    expect((await api.get(`/api/drafts/${draftId}`)).status).toBe(404);
  });

  it('with sendAt it is scheduled, and a retry under the key replays the first answer although the draft is gone', async () => {
    const { a, b } = await twoMailboxes(server);
    const api = server.api(a.token);
    const sendAt = clock.now().getTime() + HOUR;
    const { draftId } = (await api.post('/api/drafts', { toAddress: b.address, bodyText: 'later', sendAt })).body.data;
    const key = { 'Idempotency-Key': `draft-${draftId}` };
    const first = await api.post(`/api/drafts/${draftId}/send`, undefined, key);
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect(first.body.data).toMatchObject({ status: 'scheduled', sendAtTs: sendAt });
    const again = await api.post(`/api/drafts/${draftId}/send`, undefined, key);
    expect(again.status).toBe(202);
    expect(again.body.data).toEqual(first.body.data);
    // The key now names that send: the same content sent directly, or at another time, is a conflict.
    const direct = await api.post('/api/messages/send', sendBody(b.address, { bodyText: 'later', sendAt }), key);
    expect(direct.body).toMatchObject({ code: 409, errorCode: 'IDEMPOTENCY_CONFLICT' });
    // Another draft under the same key: 409, and that draft stays.
    const other = (await api.post('/api/drafts', { toAddress: b.address, bodyText: 'x' })).body.data.draftId;
    expect((await api.post(`/api/drafts/${other}/send`, undefined, key)).status).toBe(409);
    expect((await api.get(`/api/drafts/${other}`)).status).toBe(200);
    // The scheduled message can be cancelled like any scheduled send.
    const cancel = await api.delete(`/api/messages/${first.body.data.messageId}/schedule`);
    expect(cancel.body.data).toMatchObject({ status: 'cancelled', cancelled: true });
    expect((await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId}`)[0].n).toBe(1);
  });

  it('a domain token retrying without mailboxAddress gets the first answer too', async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const api = server.api(domain.token);
    const { draftId } = (
      await api.post('/api/drafts', { mailboxAddress: a.address, toAddress: b.address, bodyText: 'x' })
    ).body.data;
    const key = { 'Idempotency-Key': 'domain-retry' };
    const first = await api.post(`/api/drafts/${draftId}/send`, undefined, key);
    expect(first.status).toBe(202);
    expect((await api.post(`/api/drafts/${draftId}/send`, undefined, key)).body.data).toEqual(first.body.data);
  });

  it('only one of two concurrent sends of a draft sends', async () => {
    const { a, b } = await twoMailboxes(server);
    const api = server.api(a.token);
    const { draftId } = (await api.post('/api/drafts', { toAddress: b.address, bodyText: 'once' })).body.data;
    const results = await Promise.all([1, 2, 3].map(() => api.post(`/api/drafts/${draftId}/send`)));
    expect(results.map((r) => r.status).sort()).toEqual([202, 404, 404]);
    expect(
      (await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId} and direction = 'outbound'`)[0]
        .n,
    ).toBe(1);
  });

  it('concurrent sends of a draft under one key: one message, and every answer is its 202', async () => {
    const { a, b } = await twoMailboxes(server);
    const api = server.api(a.token);
    const { draftId } = (await api.post('/api/drafts', { toAddress: b.address, bodyText: 'once' })).body.data;
    const key = { 'Idempotency-Key': 'concurrent-draft' };
    const results = await Promise.all([1, 2, 3, 4].map(() => api.post(`/api/drafts/${draftId}/send`, undefined, key)));
    expect(results.map((r) => r.status)).toEqual([202, 202, 202, 202]);
    expect(new Set(results.map((r) => r.body.data.messageId)).size).toBe(1);
    expect(
      (await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId} and direction = 'outbound'`)[0]
        .n,
    ).toBe(1);
    expect((await eventsOf(a.token)).filter((e) => e.type === 'draft.deleted')).toHaveLength(1);
  });

  it('a draft changed between the read and the send is DRAFT_CHANGED, and nothing is sent', async () => {
    const { a, b } = await twoMailboxes(server);
    const services = server.runtime.services;
    const { draftId } = (await server.api(a.token).post('/api/drafts', { toAddress: b.address, bodyText: 'v1' })).body
      .data;
    const principal = await services.tokenAuth.authenticate(a.token, null);
    const read = (await services.drafts.target(principal, draftId, undefined))!;
    await server.api(a.token).patch(`/api/drafts/${draftId}`, { bodyText: 'v2' });
    await expect(
      services.db.tx((trx) => services.drafts.removeSent(trx, read, 'msg_x', clock.now())),
    ).rejects.toMatchObject({ code: 'DRAFT_CHANGED', status: 409 });
    expect((await server.api(a.token).get(`/api/drafts/${draftId}`)).body.data.bodyText).toBe('v2');
  });
});

describe('uploads a draft holds', () => {
  it('are not swept past UPLOAD_TTL while the draft exists; deleting the draft releases them', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const held = await upload(a.token, 'kept.txt');
    const loose = await upload(a.token, 'loose.txt');
    const { draftId } = (await api.post('/api/drafts', { attachmentIds: [held] })).body.data;
    const services = server.runtime.services;
    const sweeper = new StorageSweeper(services.db, services.blobs, clock, {
      orphanGraceMs: HOUR,
      uploadTtlMs: services.config.UPLOAD_TTL,
    });
    clock.advance(services.config.UPLOAD_TTL + 1);
    await sweeper.sweep();
    const left = async () =>
      (await q`select id from attachment where id = any(${[held, loose]}::text[])`).map((r) => r.id as string);
    expect(await left()).toEqual([held]);
    await api.delete(`/api/drafts/${draftId}`);
    await sweeper.sweep();
    expect(await left()).toEqual([]);
  });

  it('an upload a draft holds cannot be sent by another message or held by another draft', async () => {
    const { a, b } = await twoMailboxes(server);
    const api = server.api(a.token);
    const id = await upload(a.token);
    const { draftId } = (await api.post('/api/drafts', { attachmentIds: [id] })).body.data;
    const direct = await api.post('/api/messages/send', sendBody(b.address, { attachmentIds: [id] }));
    expect(direct.body).toMatchObject({ code: 400, errorCode: 'ATTACHMENT_UNKNOWN' });
    const second = await api.post('/api/drafts', { attachmentIds: [id] });
    expect(second.body).toMatchObject({ code: 400, errorCode: 'ATTACHMENT_UNKNOWN' });
    // Taken out of the draft, it is free again.
    await api.patch(`/api/drafts/${draftId}`, { attachmentIds: [] });
    expect((await api.post('/api/messages/send', sendBody(b.address, { attachmentIds: [id] }))).status).toBe(202);
  });

  it('go with an ephemeral mailbox: its drafts and their uploads are swept with it', async () => {
    const domain = await server.createDomain();
    const res = await server.api(domain.token).post('/api/mailboxes', { localPart: 'brief', ttlSeconds: 60 });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const { mailbox, initialAccessToken } = res.body.data;
    const id = await upload(initialAccessToken);
    const { draftId } = (await server.api(initialAccessToken).post('/api/drafts', { attachmentIds: [id] })).body.data;
    clock.advance(61_000);
    const services = server.runtime.services;
    await new MailboxExpirySweeper(services.db, services.blobs, clock).sweep();
    expect(await q`select id from draft where mailbox_id = ${mailbox.mailboxId}`).toEqual([]);
    expect(await q`select id from attachment where id = ${id} or draft_id = ${draftId}`).toEqual([]);
  });
});
