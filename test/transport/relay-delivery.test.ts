import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { authenticate } from 'mailauth';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody, waitFor } from '../delivery/helpers.js';
import { submitter } from '../smtp/world.js';
import { startDnsStub } from './dns-stub.js';
import { startSink } from './smtp-sink.js';
import { fastWorker, recipientsOfMessage, runWorkerUntil } from './world.js';

let server: TestServer;
let sink: Awaited<ReturnType<typeof startSink>>;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let x: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);
const statusOf = async (id: string) =>
  (await q`select delivery_status from message where id = ${id}`)[0].delivery_status as string;

beforeAll(async () => {
  sink = await startSink({ auth: { user: 'relay-user', pass: 'relay-pass' } });
  dns = await startDnsStub({});
  // The sink offers STARTTLS with smtp-server's built-in (expired) certificate: ?tls=insecure.
  server = await startTransportServer(`smtp://relay-user:relay-pass@127.0.0.1:${sink.port}?tls=insecure`);
  x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
});
afterAll(async () => {
  await server?.close();
  await sink?.close();
  await dns?.close();
});
beforeEach(() => sink.script({}));

function startTransportServer(relayUrl: string) {
  return import('./world.js').then((w) => w.startTransportServer({ SMTP_RELAY_URL: relayUrl }));
}

async function send(to: string[], extra: Record<string, unknown> = {}): Promise<string> {
  const res = await server.api(alice.token).post('/api/messages/send', sendBody(to, extra));
  expect(res.status).toBe(202);
  return res.body.data.messageId;
}

describe('external delivery through SMTP_RELAY_URL', () => {
  it('relays an API send with AUTH, DKIM-signed with the domain key its DNS record publishes', async () => {
    const id = await send(['carol@remote.example'], { subject: 'Over the relay', bodyHtml: '<p>hi</p>' });
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'delivered');
    expect(sink.copiesFor('carol@remote.example')).toBe(1);
    const [recipient] = await recipientsOfMessage(server, id);
    expect(recipient).toMatchObject({
      status: 'delivered',
      remote_reply: expect.stringMatching(/^250 .*SINK/),
      attempts: 1,
    });
    const message = sink.accepted.find((m) => m.to.includes('carol@remote.example'))!;
    expect(message.from).toBe(alice.address);
    const raw = message.raw.toString();
    expect(raw).toMatch(/^DKIM-Signature: /);
    expect(raw).toContain('Subject: Over the relay');
    // Publish the record the domain route hands out, then verify like a receiver would.
    const record = (await server.api(x.token).get('/api/domain/dkim')).body.data;
    expect(record).toMatchObject({
      domain: x.name,
      name: `${record.selector}._domainkey.${x.name}`,
      type: 'TXT',
      value: expect.stringMatching(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]+$/),
    });
    dns.records[record.name] = { TXT: [record.value] };
    const resolver = (await import('../../src/core/base/net/dns-resolver.js')).dnsResolver(dns.server);
    const verdict = await authenticate(message.raw, {
      ip: '127.0.0.1',
      helo: 'mail.test',
      sender: alice.address,
      resolver,
      disableArc: true,
      disableBimi: true,
      disableDmarc: true,
    });
    expect(verdict.dkim.results[0]).toMatchObject({ signingDomain: x.name, status: { result: 'pass' } });
    const events =
      await q`select payload from mailbox_event where mailbox_id = ${alice.mailboxId} and type = 'message.delivery'`;
    expect(events.map((e) => e.payload.data)).toContainEqual(
      expect.objectContaining({
        messageId: id,
        recipient: 'carol@remote.example',
        recipientStatus: 'delivered',
        deliveryStatus: 'delivered',
      }),
    );
  });

  it('relays a message submitted over SMTP as submitted, without its Bcc header', async () => {
    const client = submitter(server, alice.address, alice.token);
    const info = await client.sendMail({
      from: alice.address,
      to: 'dora@remote.example',
      bcc: 'hidden@remote.example',
      subject: 'Submitted',
      text: 'kept as is',
    });
    client.close();
    const id = /Queued as (msg_\w+)/.exec(info.response)![1]!;
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'delivered');
    const relayed = sink.accepted.find((m) => m.to.includes('hidden@remote.example'))!;
    expect(relayed.to.sort()).toEqual(['dora@remote.example', 'hidden@remote.example']);
    const text = relayed.raw.toString();
    expect(text).not.toMatch(/^bcc:/im);
    expect(text).toContain(`Message-ID: ${info.messageId}`);
    expect(text).toContain('kept as is');
  });

  it('retries a 4xx with backoff and delivers exactly once', async () => {
    sink.script({ rcpt: { 'busy@remote.example': '451 4.3.0 Try again later' } });
    const id = await send(['busy@remote.example']);
    await runWorkerUntil(
      server,
      async () => (await recipientsOfMessage(server, id))[0].status === 'deferred',
      'deferred',
    );
    const [deferred] = await recipientsOfMessage(server, id);
    expect(deferred.remote_reply).toMatch(/^451 /);
    expect(await statusOf(id)).toBe('deferred');
    sink.script({});
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'delivered after retry');
    expect(sink.copiesFor('busy@remote.example')).toBe(1);
    const [job] = await q`select attempts, status from outbox_job where message_id = ${id}`;
    expect(job.status).toBe('done');
    expect(job.attempts).toBeGreaterThanOrEqual(2);
  });

  it('retries after the relay drops the connection mid-DATA', async () => {
    sink.script({ dropAfterBytes: 200 });
    const id = await send(['dropped@remote.example'], { bodyText: 'x'.repeat(5000) });
    await runWorkerUntil(
      server,
      async () => (await recipientsOfMessage(server, id))[0].status === 'deferred',
      'deferred',
    );
    expect((await recipientsOfMessage(server, id))[0].remote_reply).toMatch(/^451 4\.4\.1 /);
    sink.script({});
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'delivered after drop');
    expect(sink.copiesFor('dropped@remote.example')).toBe(1);
  });

  it("bounces a 5xx: an RFC 3464 report in the sender's mailbox, threaded with the original", async () => {
    sink.script({ rcpt: { 'gone@remote.example': '550 5.1.1 User unknown' } });
    const id = await send(['gone@remote.example'], { subject: 'To nowhere' });
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'failed', 'failed');
    const [recipient] = await recipientsOfMessage(server, id);
    expect(recipient).toMatchObject({ status: 'failed', remote_reply: '550 5.1.1 User unknown' });
    const [original] = await q`select thread_id, internet_message_id from message where id = ${id}`;
    const [bounce] =
      await q`select * from message where mailbox_id = ${alice.mailboxId} and direction = 'inbound' and in_reply_to_message_id = ${id}`;
    expect(bounce).toMatchObject({
      thread_id: original.thread_id,
      subject: 'Undelivered Mail Returned to Sender',
      from_address: 'mailer-daemon@mail.test',
      is_read: false,
    });
    expect(bounce.body_text).toContain('<gone@remote.example>: 550 5.1.1 User unknown');
    const raw = (await server.runtime.services.blobs.get(bounce.raw_blob_key)).toString();
    expect(raw).toMatch(/Content-Type: multipart\/report; report-type=delivery-status/);
    expect(raw).toMatch(
      /Final-Recipient: rfc822; gone@remote\.example\r\nAction: failed\r\nStatus: 5\.1\.1\r\nDiagnostic-Code: smtp; 550 5\.1\.1 User unknown/,
    );
    expect(raw).toContain(`In-Reply-To: ${original.internet_message_id}`);
    expect(raw).toContain('Auto-Submitted: auto-replied');
  });

  it('stores a remote reply cut inside an emoji, or carrying NUL, as well-formed text', async () => {
    // "550 5.1.1 " is 10 characters: the emoji's high surrogate sits at index 999, where the reply is cut.
    sink.script({
      rcpt: {
        'cut@remote.example': `550 5.1.1 ${'x'.repeat(989)}\u{1F600} tail`,
        'nul@remote.example': '550 5.1.1 bad\u0000reply',
      },
    });
    const id = await send(['cut@remote.example', 'nul@remote.example'], { subject: 'Odd replies' });
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'failed', 'failed');
    const replies = (await recipientsOfMessage(server, id)).map((r) => r.remote_reply as string);
    expect(replies.every((r) => r.isWellFormed() && !r.includes('\u0000'))).toBe(true);
    expect(replies.find((r) => r.includes('xxx'))).toHaveLength(1000);
    const events =
      await q`select payload from mailbox_event where mailbox_id = ${alice.mailboxId} and type = 'message.delivery' and payload->'data'->>'messageId' = ${id}`;
    expect(events.length).toBeGreaterThan(0);
  });

  it('sends each recipient exactly once across attempts: delivered ones are never sent again', async () => {
    sink.script({
      rcpt: { 'later@remote.example': '452 4.2.2 Mailbox full', 'never@remote.example': '554 5.7.1 Rejected' },
    });
    const id = await send(['ok@remote.example', 'later@remote.example', 'never@remote.example']);
    await runWorkerUntil(
      server,
      async () => {
        const r = await recipientsOfMessage(server, id);
        return r.every((x) => x.status !== 'queued') && r;
      },
      'first attempt',
    );
    expect((await recipientsOfMessage(server, id)).map((r) => [r.address, r.status])).toEqual([
      ['later@remote.example', 'deferred'],
      ['never@remote.example', 'failed'],
      ['ok@remote.example', 'delivered'],
    ]);
    expect(await statusOf(id)).toBe('deferred');
    sink.script({});
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'failed', 'final');
    expect([
      sink.copiesFor('ok@remote.example'),
      sink.copiesFor('later@remote.example'),
      sink.copiesFor('never@remote.example'),
    ]).toEqual([1, 1, 0]);
    const second = sink.accepted.find((m) => m.to.includes('later@remote.example'))!;
    expect(second.to).toEqual(['later@remote.example']);
    const bounces =
      await q`select id from message where mailbox_id = ${alice.mailboxId} and in_reply_to_message_id = ${id}`;
    expect(bounces).toHaveLength(1);
  });

  it('runs its concurrency of jobs side by side: a slow relay holds four at once, each message sent once', async () => {
    sink.script({ dataDelayMs: 300 });
    sink.resetPeak();
    const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => send([`slow${i}@remote.example`])));
    const worker = fastWorker(server, 'concurrent-worker', 30_000, 4);
    worker.start();
    try {
      for (const id of ids) await waitFor(async () => (await statusOf(id)) === 'delivered', 20_000, `${id} delivered`);
    } finally {
      await worker.stop();
    }
    expect(sink.peakInData()).toBe(4);
    for (let i = 0; i < 8; i++) expect(sink.copiesFor(`slow${i}@remote.example`)).toBe(1);
  });

  it('stop() waits for every job in flight: none is left leased, each recorded once', async () => {
    sink.script({ dataDelayMs: 400 });
    sink.resetPeak();
    const ids = await Promise.all(Array.from({ length: 4 }, (_, i) => send([`held${i}@remote.example`])));
    const worker = fastWorker(server, 'stopping-worker', 30_000, 4);
    worker.start();
    await waitFor(async () => sink.peakInData() === 4, 10_000, 'four in DATA');
    await worker.stop();
    const jobs = await q`select status, lease_until from outbox_job where message_id = any(${ids}::text[])`;
    expect(jobs).toHaveLength(4);
    expect(jobs.every((j) => j.status === 'done' && j.lease_until === null)).toBe(true);
    for (const id of ids) expect(await statusOf(id)).toBe('delivered');
  });
});
