import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { createTenants, mintToken, seedMessage, type Tenants } from '../support/tenants.js';
import { fails, mcpClient, ok, sameError } from './helpers.js';

// The write-side tools against the HTTP API: same answers, same errors, one rate limit and one
// idempotency store shared by both channels.

const MAX_ATTACHMENT_BYTES = 2048;

let server: TestServer;
let t: Tenants;
let a1: Client;
let dx: Client;

beforeAll(async () => {
  server = await startTestServer({
    env: { MAX_ATTACHMENT_BYTES: String(MAX_ATTACHMENT_BYTES), SEND_RATE_LIMIT_PER_MINUTE: '1000' },
  });
  t = await createTenants(server);
  [a1, dx] = await Promise.all([mcpClient(server, t.A1.token), mcpClient(server, t.X.token)]);
});
afterAll(async () => {
  await Promise.all([a1, dx].map((c) => c?.close()));
  await server?.close();
});

const http = (token: string) => server.api(token);
const mail = (extra: Record<string, unknown> = {}) => ({
  toAddress: 'someone@remote.example',
  subject: 'Hello',
  bodyText: 'Hi there',
  ...extra,
});
const accepted = {
  messageId: expect.stringMatching(/^msg_/),
  threadId: expect.stringMatching(/^thr_/),
  status: 'queued',
  queuedAtTs: expect.any(Number),
};

describe('send_mail', () => {
  it('answers the 202 data of POST /api/messages/send; the message reads the same over both channels', async () => {
    const res = await ok(
      a1,
      'send_mail',
      mail({ toAddress: ['Someone@Remote.example', 'other@remote.example'], ccAddresses: ['cc@remote.example'] }),
    );
    const viaHttp = await http(t.A1.token).post('/api/messages/send', mail());
    expect(viaHttp.status).toBe(202);
    expect(res).toEqual(accepted);
    expect(Object.keys(res).sort()).toEqual(Object.keys(viaHttp.body.data).sort());
    const detail = await ok(a1, 'get_message', { messageId: res.messageId });
    expect(detail).toEqual((await http(t.A1.token).get(`/api/messages/${res.messageId}`)).body.data);
    expect(detail).toMatchObject({
      direction: 'outbound',
      toAddresses: ['someone@remote.example', 'other@remote.example'],
      ccAddresses: ['cc@remote.example'],
      deliveryStatus: 'queued',
    });
  });

  it('a domain token must give mailboxAddress (400) and may send for any mailbox of its domain', async () => {
    const missing = await fails(dx, 'send_mail', mail());
    expect(missing.code).toBe(400);
    sameError(await http(t.X.token).post('/api/messages/send', mail()), missing);
    const res = await ok(dx, 'send_mail', mail({ mailboxAddress: t.A2.address }));
    expect((await http(t.X.token).get(`/api/messages/${res.messageId}`)).body.data.mailboxAddress).toBe(t.A2.address);
    // A mailbox token naming another mailbox: 400, as over HTTP.
    sameError(
      await http(t.A1.token).post('/api/messages/send', mail({ mailboxAddress: t.A2.address })),
      await fails(a1, 'send_mail', mail({ mailboxAddress: t.A2.address })),
    );
  });

  it('names a missing field as required and an unknown one as unknown, in the same words as HTTP', async () => {
    const { toAddress: _omitted, ...withoutTo } = mail();
    const missing = await fails(a1, 'send_mail', withoutTo);
    expect(missing).toMatchObject({ code: 400, errMsg: 'toAddress: required' });
    sameError(await http(t.A1.token).post('/api/messages/send', withoutTo), missing);
    const unknown = await fails(a1, 'send_mail', mail({ surprise: true }));
    expect(unknown.errMsg).toBe('surprise: unknown key');
  });

  it.each([
    ['no recipient', { toAddress: [] }],
    ['a bad address', { toAddress: 'nope' }],
    ['no body', { bodyText: undefined }],
    ['an unknown field', { toAdress: 'x@remote.example' }],
    ['an unknown attachment', { attachmentIds: ['att_nope'] }],
  ])('%s is the same 400 as HTTP', async (_name, extra) => {
    const mcp = await fails(a1, 'send_mail', mail(extra));
    expect(mcp.code).toBe(400);
    const viaHttp = await http(t.A1.token).post('/api/messages/send', mail(extra));
    // A whole-object issue names where it is: HTTP's "body", MCP's "arguments".
    sameError(viaHttp, { ...mcp, errMsg: mcp.errMsg.replace(/^arguments:/, 'body:') });
  });

  it('without MailboxSend: 403', async () => {
    const { token } = await mintToken(server, {
      kind: 'mailbox',
      domainId: t.X.domainId,
      mailboxId: t.A1.mailboxId,
      scopes: ['MailboxRead'],
    });
    const reader = await mcpClient(server, token);
    const err = await fails(reader, 'send_mail', mail());
    expect(err.code).toBe(403);
    sameError(await http(token).post('/api/messages/send', mail()), err);
    await reader.close();
  });
});

describe('idempotency and rate limit, shared with HTTP', () => {
  it('idempotencyKey replays the first answer, across channels; reused with other arguments is 409', async () => {
    const key = `mcp-${Date.now()}`;
    const first = await ok(a1, 'send_mail', mail({ idempotencyKey: key }));
    expect(await ok(a1, 'send_mail', mail({ idempotencyKey: key }))).toEqual(first);
    const viaHttp = await http(t.A1.token).post('/api/messages/send', mail(), { 'idempotency-key': key });
    expect(viaHttp.body.data).toEqual(first);
    const conflict = await fails(a1, 'send_mail', mail({ subject: 'Different', idempotencyKey: key }));
    expect(conflict.code).toBe(409);
    sameError(
      await http(t.A1.token).post('/api/messages/send', mail({ subject: 'Different' }), { 'idempotency-key': key }),
      conflict,
    );
    expect((await fails(a1, 'send_mail', mail({ idempotencyKey: 'has space' }))).code).toBe(400);
  });

  it('one per-mailbox budget for both channels: 429 with retryAfterSeconds; a replay still answers', async () => {
    const limited = await server.createDomain(undefined, { sendRateLimitPerMinute: 2 });
    const box = await server.createMailbox(limited.token, `limited@${limited.name}`);
    const client = await mcpClient(server, box.token);
    const first = await ok(client, 'send_mail', mail({ idempotencyKey: 'first' }));
    expect((await http(box.token).post('/api/messages/send', mail())).status).toBe(202);
    const err = await fails(client, 'send_mail', mail());
    expect(err).toMatchObject({ code: 429, errMsg: expect.any(String), retryAfterSeconds: expect.any(Number) });
    expect(err.retryAfterSeconds).toBeGreaterThan(0);
    const overHttp = await http(box.token).post('/api/messages/send', mail());
    expect(overHttp.status).toBe(429);
    expect(overHttp.headers.get('retry-after')).toBeTruthy();
    expect(await ok(client, 'send_mail', mail({ idempotencyKey: 'first' }))).toEqual(first);
    await client.close();
  });
});

describe('reply_message', () => {
  it("answers like POST /api/messages/{id}/reply, in the parent's thread", async () => {
    const parent = await seedMessage(server, t.A1, { subject: 'Question' });
    const res = await ok(a1, 'reply_message', { messageId: parent.messageId, bodyText: 'Answer' });
    expect(res).toEqual({ ...accepted, threadId: parent.threadId });
    const detail = await ok(a1, 'get_message', { messageId: res.messageId });
    expect(detail).toMatchObject({
      subject: 'Re: Question',
      toAddresses: ['sender@remote.example'],
      inReplyToMessageId: parent.messageId,
    });
    const viaHttp = await http(t.A1.token).post(`/api/messages/${parent.messageId}/reply`, { bodyText: 'Answer' });
    expect(viaHttp.body.data.threadId).toBe(res.threadId);
  });

  it('domain token: mailboxAddress required (400), must own the parent (400); foreign ids 404', async () => {
    const parent = await seedMessage(server, t.A1);
    const body = { bodyText: 'x' };
    sameError(
      await http(t.X.token).post(`/api/messages/${parent.messageId}/reply`, body),
      await fails(dx, 'reply_message', { messageId: parent.messageId, ...body }),
    );
    const mismatch = await fails(dx, 'reply_message', {
      messageId: parent.messageId,
      mailboxAddress: t.A2.address,
      ...body,
    });
    expect(mismatch.code).toBe(400);
    sameError(
      await http(t.X.token).post(`/api/messages/${parent.messageId}/reply`, { ...body, mailboxAddress: t.A2.address }),
      mismatch,
    );
    expect(
      await ok(dx, 'reply_message', { messageId: parent.messageId, mailboxAddress: t.A1.address, ...body }),
    ).toEqual(accepted);
    const foreign = await seedMessage(server, t.B1);
    const notFound = await fails(a1, 'reply_message', { messageId: foreign.messageId, ...body });
    expect(notFound.code).toBe(404);
    sameError(await http(t.A1.token).post(`/api/messages/${foreign.messageId}/reply`, body), notFound);
  });
});

describe('upload_attachment', () => {
  const bytes = Buffer.from('hello attachment');

  it('answers like POST /api/messages/attachments; the upload can then be attached', async () => {
    const up = await ok(a1, 'upload_attachment', {
      contentBase64: bytes.toString('base64'),
      filename: '../notes.txt',
      contentType: 'Text/Plain',
    });
    const form = new FormData();
    form.set('file', new Blob([bytes], { type: 'Text/Plain' }), '../notes.txt');
    const viaHttp = await http(t.A1.token).raw('/api/messages/attachments', { method: 'POST', body: form });
    expect(viaHttp.status).toBe(201);
    expect(up).toEqual({ ...viaHttp.body.data, attachmentUploadId: expect.stringMatching(/^att_/) });
    expect(up).toMatchObject({ filename: 'notes.txt', contentType: 'text/plain', sizeBytes: bytes.length });
    const sent = await ok(a1, 'send_mail', mail({ attachmentIds: [up.attachmentUploadId] }));
    const detail = await ok(a1, 'get_message', { messageId: sent.messageId });
    expect(detail.attachments).toEqual([
      {
        attachmentId: expect.any(String),
        filename: 'notes.txt',
        contentType: 'text/plain',
        sizeBytes: bytes.length,
        contentId: null,
        disposition: 'attachment',
      },
    ]);
    // Attached once: a second use is the same 400 as HTTP.
    sameError(
      await http(t.A1.token).post('/api/messages/send', mail({ attachmentIds: [up.attachmentUploadId] })),
      await fails(a1, 'send_mail', mail({ attachmentIds: [up.attachmentUploadId] })),
    );
  });

  it('size cap (413), bad base64 (400), missing scope (403), domain token without mailboxAddress (400)', async () => {
    const tooBig = await fails(a1, 'upload_attachment', {
      contentBase64: Buffer.alloc(MAX_ATTACHMENT_BYTES + 1).toString('base64'),
      filename: 'big.bin',
    });
    expect(tooBig.code).toBe(413);
    expect(
      (
        await ok(a1, 'upload_attachment', {
          contentBase64: Buffer.alloc(MAX_ATTACHMENT_BYTES).toString('base64'),
          filename: 'max.bin',
        })
      ).sizeBytes,
    ).toBe(MAX_ATTACHMENT_BYTES);
    expect((await ok(a1, 'upload_attachment', { contentBase64: '', filename: 'empty.txt' })).sizeBytes).toBe(0);
    expect((await fails(a1, 'upload_attachment', { contentBase64: 'not base64!', filename: 'x' })).code).toBe(400);
    const { token } = await mintToken(server, {
      kind: 'mailbox',
      domainId: t.X.domainId,
      mailboxId: t.A1.mailboxId,
      scopes: ['MailboxSend'],
    });
    const sender = await mcpClient(server, token);
    expect((await fails(sender, 'upload_attachment', { contentBase64: 'aGk=', filename: 'x' })).code).toBe(403);
    await sender.close();
    expect((await fails(dx, 'upload_attachment', { contentBase64: 'aGk=', filename: 'x' })).code).toBe(400);
    expect(
      (await ok(dx, 'upload_attachment', { contentBase64: 'aGk=', filename: 'x', mailboxAddress: t.A2.address }))
        .sizeBytes,
    ).toBe(2);
  });
});

describe('request size', () => {
  it('a body beyond base64(MAX_ATTACHMENT_BYTES) + MAX_JSON_BYTES is refused with 413 before parsing', async () => {
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'upload_attachment', arguments: { filename: 'x', contentBase64: 'A'.repeat(2 * 1024 * 1024) } },
    });
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      body: huge,
      headers: {
        authorization: `Bearer ${t.A1.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
    });
    expect(res.status).toBe(413);
  });
});

describe('list_mailboxes', () => {
  it('a domain token: equals GET /api/domain/mailboxes; a mailbox token: the same 403', async () => {
    const page = await ok(dx, 'list_mailboxes', { limit: 1 });
    expect(page).toEqual((await http(t.X.token).get('/api/domain/mailboxes?limit=1')).body.data);
    expect(page.items).toEqual([
      { mailboxId: t.A1.mailboxId, address: t.A1.address, displayName: 'A1', expiresAtTs: null },
    ]);
    const next = await ok(dx, 'list_mailboxes', { limit: 1, cursor: page.nextCursor });
    expect(next.items[0].address).toBe(t.A2.address);
    const err = await fails(a1, 'list_mailboxes', {});
    expect(err.code).toBe(403);
    sameError(await http(t.A1.token).get('/api/domain/mailboxes'), err);
  });
});
