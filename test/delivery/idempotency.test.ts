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

describe('Idempotency-Key on send and reply', () => {
  it('returns the first result for the same request, and 409 for a different one under the same key', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const key = { 'idempotency-key': 'order-42' };
    const first = await api.post('/api/messages/send', sendBody('x@external.example'), key);
    expect(first.status).toBe(202);
    // Same request after normalisation: a single address equals a one-element list, case-insensitively.
    const again = await api.post('/api/messages/send', sendBody(['X@external.example']), key);
    expect(again.status).toBe(202);
    expect(again.body.data).toEqual(first.body.data);
    const different = await api.post('/api/messages/send', sendBody('x@external.example', { subject: 'Other' }), key);
    expect(different.status).toBe(409);
    expect(different.body).toMatchObject({ data: null, code: 409 });
    const rows = await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId}`;
    expect(rows[0].n).toBe(1);
    const jobs = await q`select count(*)::int as n from outbox_job where mailbox_id = ${a.mailboxId}`;
    expect(jobs[0].n).toBe(1);
  });

  it('scopes keys per mailbox', async () => {
    const { a, b } = await twoMailboxes(server);
    const key = { 'idempotency-key': 'shared-key' };
    const fromA = await server.api(a.token).post('/api/messages/send', sendBody('x@external.example'), key);
    const fromB = await server.api(b.token).post('/api/messages/send', sendBody('x@external.example'), key);
    expect(fromA.status).toBe(202);
    expect(fromB.status).toBe(202);
    expect(fromB.body.data.messageId).not.toBe(fromA.body.data.messageId);
  });

  it('lets exactly one of many concurrent identical requests send', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const key = { 'idempotency-key': 'race-1' };
    const results = await Promise.all(
      Array.from({ length: 6 }, () => api.post('/api/messages/send', sendBody('x@external.example'), key)),
    );
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(202));
    expect(new Set(results.map((r) => r.body.data.messageId)).size).toBe(1);
    const rows = await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId}`;
    expect(rows[0].n).toBe(1);
  });

  it('does not let a concurrent retry fail on the attachment the first request claimed', async () => {
    const { a } = await twoMailboxes(server);
    const form = new FormData();
    form.set('file', new Blob(['hello']), 'a.txt');
    const upload = await server.api(a.token).raw('/api/messages/attachments', { method: 'POST', body: form });
    expect(upload.status).toBe(201);
    const body = sendBody('x@external.example', { attachmentIds: [upload.body.data.attachmentUploadId] });
    const key = { 'idempotency-key': 'race-att' };
    const results = await Promise.all(
      Array.from({ length: 4 }, () => server.api(a.token).post('/api/messages/send', body, key)),
    );
    expect(results.map((r) => r.status)).toEqual(Array(4).fill(202));
    expect(new Set(results.map((r) => r.body.data.messageId)).size).toBe(1);
  });

  it('a different sendAt (or cancelOnReply with it) under the same key is a different request: 409', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const key = { 'idempotency-key': 'later-k' };
    const sendAt = Date.now() + 3_600_000;
    const first = await api.post('/api/messages/send', sendBody('x@external.example', { sendAt }), key);
    expect(first.status).toBe(202);
    expect(first.body.data).toMatchObject({ status: 'scheduled', sendAtTs: sendAt });
    expect((await api.post('/api/messages/send', sendBody('x@external.example', { sendAt }), key)).body.data).toEqual(
      first.body.data,
    );
    for (const changed of [{ sendAt: sendAt + 60_000 }, { sendAt, cancelOnReply: true }, {}]) {
      const res = await api.post('/api/messages/send', sendBody('x@external.example', changed), key);
      expect(res.body, JSON.stringify(changed)).toMatchObject({ code: 409, errorCode: 'IDEMPOTENCY_CONFLICT' });
    }
    const rows = await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId}`;
    expect(rows[0].n).toBe(1);
  });

  it('refuses a malformed key with 400 and a reply with a send key with 409', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const bad = await api.post('/api/messages/send', sendBody('x@external.example'), {
      'idempotency-key': 'x'.repeat(201),
    });
    expect(bad.status).toBe(400);
    const sent = await api.post('/api/messages/send', sendBody('x@external.example'), { 'idempotency-key': 'k' });
    const reply = await api.post(
      `/api/messages/${sent.body.data.messageId}/reply`,
      { bodyText: 'Hi there' },
      { 'idempotency-key': 'k' },
    );
    expect(reply.status).toBe(409);
    const replyKey = { 'idempotency-key': 'reply-k' };
    const r1 = await api.post(`/api/messages/${sent.body.data.messageId}/reply`, { bodyText: 'once' }, replyKey);
    const r2 = await api.post(`/api/messages/${sent.body.data.messageId}/reply`, { bodyText: 'once' }, replyKey);
    expect(r1.status).toBe(202);
    expect(r2.body.data).toEqual(r1.body.data);
  });
});
