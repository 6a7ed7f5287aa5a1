import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simpleParser } from 'mailparser';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody } from './helpers.js';
import { startSink } from '../transport/smtp-sink.js';
import { runWorkerUntil, startTransportServer } from '../transport/world.js';
import { submitter } from '../smtp/world.js';
import { StorageSweeper } from '../../src/core/flows/housekeeping/storage-sweeper.js';

// The raw route for outbound mail: the source as it left (DKIM-signed), stored once by the
// delivery worker, for mail relayed out and for mail delivered only to hosted mailboxes alike.

const HOUR = 3_600_000;

let server: TestServer;
let sink: Awaited<ReturnType<typeof startSink>>;
let alice: { mailboxId: string; address: string; token: string };
let bob: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);

beforeAll(async () => {
  sink = await startSink();
  server = await startTransportServer({ SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.port}?tls=insecure` });
  const x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  bob = await server.createMailbox(x.token, `bob@${x.name}`, 'Bob');
});
afterAll(async () => {
  await server?.close();
  await sink?.close();
});

const getRaw = (id: string, token: string) =>
  fetch(`${server.url}/api/messages/${id}/raw`, { headers: { authorization: `Bearer ${token}` } });
const statusOf = async (id: string) =>
  (await q`select delivery_status from message where id = ${id}`)[0].delivery_status as string;
const sentKeyOf = async (id: string) =>
  (await q`select sent_raw_blob_key from message where id = ${id}`)[0].sent_raw_blob_key as string | null;

async function send(to: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await server.api(alice.token).post('/api/messages/send', sendBody(to, extra));
  expect(res.status).toBe(202);
  return res.body.data.messageId;
}

describe('raw source of outbound mail', () => {
  it('answers exactly the bytes the relay received, DKIM-Signature included, as an attachment', async () => {
    const id = await send('carol@remote.example', { subject: 'As it left', bodyHtml: '<p>hi ✓</p>' });
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'delivered');
    const relayed = sink.accepted.find((m) => m.to.includes('carol@remote.example'))!;
    expect(relayed.raw.toString()).toMatch(/^DKIM-Signature: /);

    const raw = await getRaw(id, alice.token);
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toBe('message/rfc822');
    expect(raw.headers.get('content-disposition')).toBe(`attachment; filename="${id}.eml"; filename*=UTF-8''${id}.eml`);
    expect(Buffer.from(await raw.arrayBuffer()).equals(relayed.raw)).toBe(true);
    const detail = await server.api(alice.token).get(`/api/messages/${id}`);
    expect(detail.body.data.rawContentPath).toBe(`/api/messages/${id}/raw`);

    // Stored once: another pass of the worker keeps the blob it stored.
    const key = await sentKeyOf(id);
    expect(key).toMatch(/^raw\//);
    await runWorkerUntil(server, async () => true, 'idle pass');
    expect(await sentKeyOf(id)).toBe(key);
  });

  it('stores the signed form of a message delivered only to hosted mailboxes, with its Message-ID', async () => {
    const id = await send(bob.address, { subject: 'Local only', bodyText: 'stays here' });
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'delivered');
    const detail = await server.api(alice.token).get(`/api/messages/${id}`);
    expect(detail.body.data.rawContentPath).toBe(`/api/messages/${id}/raw`);
    const [row] = await q`select internet_message_id from message where id = ${id}`;

    const first = await getRaw(id, alice.token);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('message/rfc822');
    const bytes = Buffer.from(await first.arrayBuffer());
    expect(bytes.toString()).toMatch(/^DKIM-Signature: /);
    const parsed = await simpleParser(bytes);
    expect(parsed.messageId).toBe(row.internet_message_id);
    expect(parsed.subject).toBe('Local only');
    expect(parsed.text?.trim()).toBe('stays here');
    // The same bytes however often it is asked.
    expect(Buffer.from(await (await getRaw(id, alice.token)).arrayBuffer()).equals(bytes)).toBe(true);

    // Another mailbox of the same domain gets a 404, as for inbound raw sources.
    expect((await getRaw(id, bob.token)).status).toBe(404);
  });

  it('keeps the stored source from the sweeper while the message exists, and lets it go with the message', async () => {
    const id = await send('dave@remote.example', { subject: 'Swept with its message' });
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'delivered');
    const key = (await sentKeyOf(id))!;
    const blobs = server.runtime.services.blobs;
    const exists = (k: string) =>
      blobs.get(k).then(
        () => true,
        () => false,
      );
    const sweeper = new StorageSweeper(
      server.runtime.services.db,
      blobs,
      { now: () => new Date(Date.now() + 2 * HOUR) },
      { orphanGraceMs: HOUR, uploadTtlMs: 24 * HOUR },
    );
    await sweeper.sweep();
    expect(await exists(key)).toBe(true);
    expect((await getRaw(id, alice.token)).status).toBe(200);

    // However the row goes (a purge, an expiring mailbox), its source goes with it on the next sweep.
    await q`delete from message_recipient where message_id = ${id}`;
    await q`delete from outbox_job where message_id = ${id}`;
    await q`delete from message where id = ${id}`;
    const swept = await sweeper.sweep();
    expect(swept.orphanBlobs).toBeGreaterThanOrEqual(1);
    expect(await exists(key)).toBe(false);
  });

  it('keeps the raw a 587 client submitted, without a second copy', async () => {
    const client = submitter(server, alice.address, alice.token);
    const info = await client.sendMail({ from: alice.address, to: bob.address, subject: 'Submitted', text: 'as is' });
    client.close();
    const id = /Queued as (msg_\w+)/.exec(info.response)![1]!;
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'delivered');
    expect(await sentKeyOf(id)).toBeNull();
    const raw = await (await getRaw(id, alice.token)).text();
    expect(raw).toContain('as is');
    expect(raw).not.toMatch(/^DKIM-Signature: /);
  });
});
