import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody, waitFor } from '../delivery/helpers.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { rfc5322 } from '../smtp/smtp-wire.js';
import { mxPort, startSmtpTestServer, submitter } from '../smtp/world.js';
import { deliverToMx, mxRefusal } from '../smtp/mx-peer.js';
import { fails, mcpClient, ok } from '../mcp/helpers.js';
import { AppError } from '../../src/core/base/errors.js';

// The storage quota (docs/api.md, "Storage quota") on every path that stores a message: port 25,
// local delivery, the sender's copy (HTTP, MCP, SMTP submission), uploads; released on delete.
let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let domain: { domainId: string; name: string; token: string };
const q = rowsOf(() => server);
type Box = { mailboxId: string; address: string; token: string };

beforeAll(async () => {
  dns = await startDnsStub({ 'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  server = await startSmtpTestServer({
    roles: ['api', 'smtp', 'worker'],
    env: {
      DNS_SERVERS: dns.server,
      MAX_PENDING_UPLOADS_PER_MAILBOX: '3',
      MAX_PENDING_UPLOAD_BYTES_PER_MAILBOX: '10000',
      SEND_RATE_LIMIT_PER_MINUTE: '1000',
    },
  });
  domain = await server.createDomain();
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

let n = 0;
const newBox = async (): Promise<Box> => server.createMailbox(domain.token, `q${++n}@${domain.name}`, `Q${n}`);
const used = async (mailboxId: string): Promise<number> =>
  Number((await q`select storage_used_bytes from mailbox where id = ${mailboxId}`)[0].storage_used_bytes);
const liveStored = async (mailboxId: string): Promise<number> =>
  Number(
    (
      await q`select coalesce(sum(stored_bytes), 0) as s from message where mailbox_id = ${mailboxId} and deleted_at is null`
    )[0].s,
  );
const setQuota = async (box: Box, bytes: number | null) => {
  const res = await server
    .api(domain.token)
    .put(`/api/domain/mailboxes/${box.mailboxId}/storage`, { storageQuotaBytes: bytes });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
};
/**
 * POST /api/messages/attachments declaring a `fileBytes` form, of which only the headers and the
 * first part's opening are sent: what the server answers without the rest (or "no answer").
 */
function headersOnlyUpload(token: string, fileBytes: number): Promise<string> {
  const { hostname, port } = new URL(server.url);
  const boundary = 'early-refusal';
  const opening = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const length = opening.length + fileBytes + `\r\n--${boundary}--\r\n`.length;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () =>
      socket.write(
        `POST /api/messages/attachments HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\n` +
          `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${length}\r\n\r\n${opening}`,
      ),
    );
    let answer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(answer || 'no answer');
    }, 5_000);
    socket.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
      if (answer.includes('\r\n\r\n') && /\}\s*$/.test(answer)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(answer);
      }
    });
    socket.on('error', reject);
  });
}
const mx = (to: string, subject: string, body = 'Hello over the wire.') =>
  deliverToMx(
    mxPort(server),
    { from: 'news@sender.example', to },
    rfc5322({ from: 'news@sender.example', to, subject, body }),
  );

describe('storage quota', () => {
  it('reports use and quota; the domain token sets the mailbox quota and the domain default', async () => {
    const box = await newBox();
    const mine = await server.api(box.token).get('/api/mailbox/storage');
    expect(mine.status).toBe(200);
    expect(mine.body.data).toMatchObject({
      mailboxId: box.mailboxId,
      usedBytes: 0,
      quotaBytes: null,
      mailboxQuotaBytes: null,
      pendingUploads: 0,
    });
    // Only a domain token sets quotas.
    const refused = await server.api(box.token).put(`/api/domain/mailboxes/${box.mailboxId}/storage`, {
      storageQuotaBytes: 1,
    });
    expect(refused.status).toBe(403);

    const dflt = await server.api(domain.token).put('/api/domain/storage', { defaultStorageQuotaBytes: 5_000_000 });
    expect(dflt.body.data).toMatchObject({ domainId: domain.domainId, defaultStorageQuotaBytes: 5_000_000 });
    expect((await server.api(box.token).get('/api/mailbox/storage')).body.data).toMatchObject({
      quotaBytes: 5_000_000,
      mailboxQuotaBytes: null,
      domainDefaultQuotaBytes: 5_000_000,
    });
    expect(await setQuota(box, 1234)).toMatchObject({ quotaBytes: 1234, mailboxQuotaBytes: 1234 });
    expect(await setQuota(box, null)).toMatchObject({ quotaBytes: 5_000_000 });
    await server.api(domain.token).put('/api/domain/storage', { defaultStorageQuotaBytes: null });
    expect((await server.api(domain.token).get('/api/domain/storage')).body.data.defaultStorageQuotaBytes).toBeNull();
  });

  it('port 25 charges raw, bodies and attachments in the commit; a full mailbox gets 552 5.2.2 at RCPT', async () => {
    const box = await newBox();
    expect((await mx(box.address, 'first')).response).toMatch(/^250 /);
    const afterOne = await used(box.mailboxId);
    expect(afterOne).toBeGreaterThan(rfc5322({ from: 'x', to: box.address }).length); // raw + body at least
    expect(afterOne).toBe(await liveStored(box.mailboxId));
    // Room for less than one more: the commit refuses it (RCPT still saw room).
    await setQuota(box, afterOne + 100);
    expect(
      await mxRefusal(
        mxPort(server),
        { from: 'news@sender.example', to: box.address },
        rfc5322({
          from: 'news@sender.example',
          to: box.address,
          subject: 'too big',
        }),
      ),
    ).toMatch(/^552 5\.2\.2 /);
    expect(await used(box.mailboxId)).toBe(afterOne);
    // At the quota: refused at RCPT TO already.
    await setQuota(box, afterOne);
    expect(
      await mxRefusal(
        mxPort(server),
        { from: 'news@sender.example', to: box.address },
        rfc5322({ from: 'news@sender.example', to: box.address, subject: 'full' }),
      ),
    ).toMatch(/^552 5\.2\.2 Mailbox full/);
    expect((await q`select count(*)::int as c from message where mailbox_id = ${box.mailboxId}`)[0].c).toBe(1);
  });

  it('a delete gives the bytes back, and mail is accepted again', async () => {
    const box = await newBox();
    await mx(box.address, 'to delete');
    const one = await used(box.mailboxId);
    await setQuota(box, one);
    const [msg] = await q`select id, stored_bytes from message where mailbox_id = ${box.mailboxId}`;
    expect(Number(msg.stored_bytes)).toBe(one);
    expect((await server.api(box.token).delete(`/api/messages/${msg.id}`)).status).toBe(200);
    expect(await used(box.mailboxId)).toBe(0);
    // A second delete gives nothing back twice.
    await server.api(box.token).delete(`/api/messages/${msg.id}`);
    expect(await used(box.mailboxId)).toBe(0);
    expect((await mx(box.address, 'again')).response).toMatch(/^250 /);
  });

  it("the sender's copy counts: HTTP 413 with the envelope, the same MCP tool error", async () => {
    const box = await newBox();
    await setQuota(box, 30);
    const res = await server
      .api(box.token)
      .post('/api/messages/send', sendBody('x@elsewhere.example', { bodyText: 'y'.repeat(100) }));
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: 413, errorCode: 'QUOTA_EXCEEDED', data: null });
    const client = await mcpClient(server, box.token);
    try {
      const err = await fails(client, 'send_mail', {
        toAddress: 'x@elsewhere.example',
        subject: 'Hi',
        bodyText: 'y'.repeat(100),
      });
      expect(err).toMatchObject({ code: 413, errorCode: 'QUOTA_EXCEEDED', errMsg: res.body.errMsg });
      expect(await ok(client, 'get_mailbox_storage')).toMatchObject({ usedBytes: 0, quotaBytes: 30 });
    } finally {
      await client.close();
    }
    // Small enough: accepted and charged.
    const small = await server
      .api(box.token)
      .post('/api/messages/send', sendBody('x@elsewhere.example', { subject: 's', bodyText: 'tiny' }));
    expect(small.status).toBe(202);
    expect(await used(box.mailboxId)).toBe(Buffer.byteLength('tiny'));
  });

  it('SMTP submission: a full sender mailbox is refused 552 5.2.2 at MAIL FROM', async () => {
    const box = await newBox();
    await server.api(box.token).post('/api/messages/send', sendBody('x@elsewhere.example', { bodyText: 'filler' }));
    await setQuota(box, await used(box.mailboxId));
    const client = submitter(server, box.address, box.token);
    try {
      const err = await client
        .sendMail({ from: box.address, to: 'x@elsewhere.example', subject: 'Hi', text: 'Hello' })
        .then(
          () => null,
          (e: { response?: string; command?: string }) => e,
        );
      expect(err?.response).toMatch(/^552 5\.2\.2 /);
      // The early refusal (read with the sender identity), not the commit's charge after DATA.
      expect(err?.command).toBe('MAIL FROM');
    } finally {
      client.close();
    }
  });

  it('local delivery into a full mailbox fails that recipient with 552 5.2.2 and stores nothing', async () => {
    const sender = await newBox();
    const full = await newBox();
    await mx(full.address, 'filler');
    await setQuota(full, await used(full.mailboxId));
    const before = await used(full.mailboxId);
    const sent = await server
      .api(sender.token)
      .post('/api/messages/send', sendBody(full.address, { subject: 'to full' }));
    expect(sent.status).toBe(202);
    const recipient = await waitFor(
      async () =>
        (
          await q`select status, remote_reply from message_recipient where message_id = ${sent.body.data.messageId} and status = 'failed'`
        )[0],
      10_000,
      'failed recipient',
    );
    expect(recipient.remote_reply).toBe('552 5.2.2 Mailbox full');
    // The sender is told, like for an unknown address: a bounce naming the reply.
    const bounce = await waitFor(
      async () =>
        (
          await q`select body_text from message where mailbox_id = ${sender.mailboxId} and direction = 'inbound' and body_text like '%552 5.2.2%'`
        )[0],
      10_000,
      'bounce',
    );
    expect(bounce.body_text).toContain(full.address);
    expect(await used(full.mailboxId)).toBe(before);
    expect(
      (await q`select count(*)::int as c from message where mailbox_id = ${full.mailboxId} and subject = 'to full'`)[0]
        .c,
    ).toBe(0);
  });

  it('concurrent deliveries never pass the quota', async () => {
    const box = await newBox();
    const inbound = server.runtime.services.inbound;
    const deliver = () =>
      inbound.store(undefined, {
        mailboxId: box.mailboxId,
        from: 'a@sender.example',
        to: [box.address],
        subject: 'race',
        bodyText: 'x'.repeat(1000),
        bodyHtml: null,
        internetMessageId: null,
        inReplyTo: null,
        references: [],
        receivedAt: new Date(),
      });
    await setQuota(box, 7_500); // room for 7 of 1000 bytes
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, deliver));
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(7);
    for (const r of refused) expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'QUOTA_EXCEEDED' });
    expect(refused[0] && (refused[0] as PromiseRejectedResult).reason).toBeInstanceOf(AppError);
    expect(await used(box.mailboxId)).toBe(7_000);
    expect(await liveStored(box.mailboxId)).toBe(7_000);
    // Our bounces are counted but never refused: the sender learns its mail failed even when full.
    await inbound.store(undefined, {
      mailboxId: box.mailboxId,
      from: '',
      to: [box.address],
      subject: 'Undelivered Mail Returned to Sender',
      bodyText: 'x'.repeat(1000),
      bodyHtml: null,
      internetMessageId: null,
      inReplyTo: null,
      references: [],
      receivedAt: new Date(),
      quotaExempt: true,
    });
    expect(await used(box.mailboxId)).toBe(8_000);
  });

  it('uploads: pending count and bytes capped per mailbox (429), the quota counts unclaimed uploads (413)', async () => {
    const box = await newBox();
    const upload = (bytes: number) => {
      const form = new FormData();
      form.set('file', new Blob([Buffer.alloc(bytes, 1)], { type: 'application/octet-stream' }), 'f.bin');
      return server.api(box.token).raw('/api/messages/attachments', { method: 'POST', body: form });
    };
    // Bytes: 10 000 at most unclaimed.
    expect((await upload(6000)).status).toBe(201);
    const tooMuch = await upload(5000);
    expect(tooMuch.status).toBe(429);
    expect(tooMuch.body).toMatchObject({ code: 429, errorCode: 'UPLOADS_PENDING_LIMIT' });
    // Count: 3 at most unclaimed.
    expect((await upload(10)).status).toBe(201);
    expect((await upload(10)).status).toBe(201);
    expect((await upload(10)).body.errorCode).toBe('UPLOADS_PENDING_LIMIT');
    const usage = (await server.api(box.token).get('/api/mailbox/storage')).body.data;
    expect(usage).toMatchObject({ pendingUploads: 3, pendingUploadBytes: 6020, usedBytes: 0 });
    // A send claims them: charged to the mailbox, no longer pending.
    const ids = (await q`select id from attachment where mailbox_id = ${box.mailboxId} and message_id is null`).map(
      (r) => r.id as string,
    );
    const sent = await server
      .api(box.token)
      .post('/api/messages/send', sendBody('x@elsewhere.example', { bodyText: 'see att', attachmentIds: ids }));
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(await used(box.mailboxId)).toBe(6020 + Buffer.byteLength('see att'));
    // The quota counts stored messages and unclaimed uploads together.
    await setQuota(box, (await used(box.mailboxId)) + 500);
    const overQuota = await upload(600);
    expect(overQuota.status).toBe(413);
    expect(overQuota.body.errorCode).toBe('QUOTA_EXCEEDED');
    // Refused before the body is read (a mailbox token names its mailbox up front): only the
    // headers and the file part's opening are ever sent here, and the answer still comes. A
    // declared size past the pending-bytes cap, then a mailbox at its quota.
    expect(await headersOnlyUpload(box.token, 1_000_000)).toMatch(/^HTTP\/1\.1 429 [^]*UPLOADS_PENDING_LIMIT/);
    const room = (await used(box.mailboxId)) + 500;
    await setQuota(box, await used(box.mailboxId));
    expect(await headersOnlyUpload(box.token, 10)).toMatch(/^HTTP\/1\.1 413 [^]*QUOTA_EXCEEDED/);
    await setQuota(box, room);
    // The declared size counts against the room left (the HTTP form's share of it is allowed for).
    const attachments = server.runtime.services.attachments;
    await expect(attachments.precheck(box.mailboxId, 501)).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
    await expect(attachments.precheck(box.mailboxId, 500)).resolves.toBeUndefined();
    expect((await upload(400)).status).toBe(201);
    // MCP upload_attachment: the same refusals, before anything is stored.
    const client = await mcpClient(server, box.token);
    try {
      const args = (bytes: number) => ({
        contentBase64: Buffer.alloc(bytes, 2).toString('base64'),
        filename: 'm.bin',
        contentType: 'application/octet-stream',
      });
      expect(await fails(client, 'upload_attachment', args(150))).toMatchObject({
        code: 413,
        errorCode: 'QUOTA_EXCEEDED',
      });
      await setQuota(box, null);
      await ok(client, 'upload_attachment', args(10));
      await ok(client, 'upload_attachment', args(10));
      expect(await fails(client, 'upload_attachment', args(10))).toMatchObject({
        code: 429,
        errorCode: 'UPLOADS_PENDING_LIMIT',
      });
    } finally {
      await client.close();
    }
    const blobs =
      await q`select count(*)::int as n from attachment where mailbox_id = ${box.mailboxId} and message_id is null`;
    expect(blobs).toEqual([{ n: 3 }]);
  });
});
