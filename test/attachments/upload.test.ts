import { readdirSync } from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mailboxTokenWith, rowsOf, sendBody, twoMailboxes } from '../delivery/helpers.js';

const MAX = 4096;
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: { MAX_ATTACHMENT_BYTES: String(MAX) } });
});
afterAll(async () => {
  await server?.close();
});
const q = rowsOf(() => server);

const upload = (token: string, form: FormData) =>
  server.api(token).raw('/api/messages/attachments', { method: 'POST', body: form });
const fileForm = (
  content: string | Uint8Array,
  filename = 'notes.txt',
  type = 'text/plain',
  fields: Record<string, string> = {},
) => {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  form.set('file', new Blob([typeof content === 'string' ? content : Buffer.from(content)], { type }), filename);
  return form;
};
/** A hand-written multipart body, for what FormData will not produce. */
const rawUpload = (token: string, parts: string, boundary = 'XyZ') =>
  server.api(token).raw('/api/messages/attachments', {
    method: 'POST',
    body: parts,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  });

/** Blobs no attachment row names: an upload that was refused must leave nothing behind. */
async function orphanBlobs(): Promise<string[]> {
  const services = server.runtime.services;
  const keys =
    services.config.blobStore === 'postgres'
      ? (await q`select key from blob where key like 'att/%'`).map((r) => r.key as string)
      : (() => {
          try {
            return readdirSync(path.join(services.config.dataDir, 'blobs', 'att')).map((f) => `att/${f}`);
          } catch {
            return [];
          }
        })();
  const known = new Set((await q`select blob_key from attachment`).map((r) => r.blob_key as string));
  return keys.filter((k) => !known.has(k));
}

describe('POST /api/messages/attachments', () => {
  it('stores one file and answers 201 with its id, name, type and size', async () => {
    const { a } = await twoMailboxes(server);
    const res = await upload(a.token, fileForm('hello attachment', 'notes.txt', 'text/plain;charset=utf-8'));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ code: 201, errMsg: null });
    expect(res.body.data).toEqual({
      attachmentUploadId: expect.stringMatching(/^att_/),
      filename: 'notes.txt',
      contentType: 'text/plain',
      sizeBytes: 16,
    });
    const [row] = await q`select * from attachment where id = ${res.body.data.attachmentUploadId}`;
    expect(row).toMatchObject({
      mailbox_id: a.mailboxId,
      message_id: null,
      sha256: createHash('sha256').update('hello attachment').digest('hex'),
    });
    expect((await server.runtime.services.blobs.get(row.blob_key)).toString()).toBe('hello attachment');
  });

  it('takes mailboxAddress from the form for a domain token, before or after the file', async () => {
    const { domain, a } = await twoMailboxes(server);
    const before = await upload(
      domain.token,
      fileForm('x', 'a.bin', 'application/octet-stream', { mailboxAddress: a.address }),
    );
    expect(before.status).toBe(201);
    const after = new FormData();
    after.set('file', new Blob(['y']), 'b.bin');
    after.set('mailboxAddress', a.address);
    expect((await upload(domain.token, after)).status).toBe(201);
    const rows = await q`select count(*)::int as n from attachment where mailbox_id = ${a.mailboxId}`;
    expect(rows[0].n).toBe(2);
    const missing = await upload(domain.token, fileForm('z'));
    expect(missing.status).toBe(400);
    expect(missing.body.errMsg).toMatch(/mailboxAddress/);
    const mailboxNamingOther = await upload(
      a.token,
      fileForm('z', 'c.txt', 'text/plain', { mailboxAddress: `other@${domain.name}` }),
    );
    expect(mailboxNamingOther.status).toBe(400);
    expect(await orphanBlobs()).toEqual([]);
  });

  it('needs AttachmentWrite (403) and a token (401)', async () => {
    const { a } = await twoMailboxes(server);
    const sendOnly = await mailboxTokenWith(server, a.mailboxId, ['MailboxSend']);
    const res = await upload(sendOnly, fileForm('x'));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ data: null, code: 403 });
    const anonymous = await server.api().raw('/api/messages/attachments', { method: 'POST', body: fileForm('x') });
    expect(anonymous.status).toBe(401);
  });

  it('refuses a file over MAX_ATTACHMENT_BYTES with 413 and keeps nothing', async () => {
    const { a } = await twoMailboxes(server);
    const justOver = await upload(a.token, fileForm(new Uint8Array(MAX + 1)));
    expect(justOver.status).toBe(413);
    expect(justOver.body).toMatchObject({ data: null, code: 413 });
    const declaredHuge = await upload(a.token, fileForm(new Uint8Array(MAX * 40)));
    expect(declaredHuge.status).toBe(413);
    expect((await upload(a.token, fileForm(new Uint8Array(MAX)))).status).toBe(201);
    expect(await orphanBlobs()).toEqual([]);
  });

  it('refuses malformed forms with 400 ATTACHMENT_FORM_INVALID', async () => {
    const { a } = await twoMailboxes(server);
    const noFile = new FormData();
    noFile.set('mailboxAddress', a.address);
    const twoFiles = fileForm('one');
    twoFiles.append('file', new Blob(['two']), 'two.txt');
    const wrongName = new FormData();
    wrongName.set('attachment', new Blob(['x']), 'x.txt');
    const cases: [string, Promise<Awaited<ReturnType<typeof upload>>>][] = [
      ['no file', upload(a.token, noFile)],
      ['two files', upload(a.token, twoFiles)],
      ['other field name', upload(a.token, wrongName)],
      ['json', server.api(a.token).post('/api/messages/attachments', { file: 'aGVsbG8=' })],
      ['empty body', server.api(a.token).raw('/api/messages/attachments', { method: 'POST' })],
      [
        'no boundary',
        server.api(a.token).raw('/api/messages/attachments', {
          method: 'POST',
          body: 'x',
          headers: { 'content-type': 'multipart/form-data' },
        }),
      ],
      [
        'truncated',
        rawUpload(
          a.token,
          '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello',
        ),
      ],
    ];
    for (const [name, pending] of cases) {
      const res = await pending;
      expect(res.status, name).toBe(400);
      expect(res.body, name).toMatchObject({ data: null, code: 400 });
    }
    expect(await orphanBlobs()).toEqual([]);
  });

  it('stores a sanitised filename: no path, no CR/LF or control characters', async () => {
    const { a } = await twoMailboxes(server);
    const body = [
      '--XyZ',
      'Content-Disposition: form-data; name="file"; filename="C:\\temp\\..\\re\u0007port\u202e.txt"',
      'Content-Type: text/plain',
      '',
      'data',
      '--XyZ--',
      '',
    ].join('\r\n');
    const res = await rawUpload(a.token, body);
    expect(res.status).toBe(201);
    expect(res.body.data.filename).toBe('report.txt');
    const unix = await upload(a.token, fileForm('x', '../../etc/passwd'));
    expect(unix.body.data.filename).toBe('passwd');
    const odd = await upload(a.token, fileForm('x', '...', 'not a type'));
    expect(odd.body.data).toMatchObject({ filename: 'attachment', contentType: 'application/octet-stream' });
  });
});

describe('attachments in send', () => {
  it('claims the uploads in the send transaction and counts them', async () => {
    const { a } = await twoMailboxes(server);
    const first = await upload(a.token, fileForm('one', 'one.txt'));
    const second = await upload(a.token, fileForm('two', 'two.txt'));
    const ids = [first.body.data.attachmentUploadId, second.body.data.attachmentUploadId];
    const sent = await server
      .api(a.token)
      .post('/api/messages/send', sendBody('x@external.example', { attachmentIds: ids }));
    expect(sent.status).toBe(202);
    const [msg] = await q`select attachment_count from message where id = ${sent.body.data.messageId}`;
    expect(msg.attachment_count).toBe(2);
    const claimed = await q`select message_id from attachment where id = any(${ids}::text[])`;
    expect(claimed.map((r) => r.message_id)).toEqual([sent.body.data.messageId, sent.body.data.messageId]);
    const reused = await server
      .api(a.token)
      .post('/api/messages/send', sendBody('x@external.example', { attachmentIds: [ids[0]] }));
    expect(reused.status).toBe(400);
    expect(reused.body.errMsg).toContain(ids[0]);
  });

  it("refuses another mailbox's upload or an unknown id with 400, claiming nothing", async () => {
    const { a, b } = await twoMailboxes(server);
    const mine = await upload(a.token, fileForm('mine'));
    const theirs = await upload(b.token, fileForm('theirs'));
    const res = await server.api(a.token).post(
      '/api/messages/send',
      sendBody('x@external.example', {
        attachmentIds: [mine.body.data.attachmentUploadId, theirs.body.data.attachmentUploadId],
      }),
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ data: null, code: 400 });
    const unknown = await server
      .api(a.token)
      .post('/api/messages/send', sendBody('x@external.example', { attachmentIds: ['att_nope'] }));
    expect(unknown.status).toBe(400);
    const rows = await q`select message_id from attachment where id = ${mine.body.data.attachmentUploadId}`;
    expect(rows[0].message_id).toBeNull();
    const [count] = await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId}`;
    expect(count.n).toBe(0);
  });
});
