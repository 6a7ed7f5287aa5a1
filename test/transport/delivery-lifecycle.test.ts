import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody, waitFor } from '../delivery/helpers.js';
import { claimDueJob } from '../../src/core/flows/outbound/outbox-job.store.js';
import { renewLease } from '../../src/core/flows/outbound/job-lease.js';
import { retryDelayMs } from '../../src/core/flows/outbound/retry.js';
import { startSink } from './smtp-sink.js';
import { fastWorker, recipientsOfMessage, runWorkerUntil, startTransportServer } from './world.js';

let server: TestServer;
let sink: Awaited<ReturnType<typeof startSink>>;
let x: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);
const statusOf = async (id: string) =>
  (await q`select delivery_status from message where id = ${id}`)[0].delivery_status as string;

beforeAll(async () => {
  sink = await startSink();
  server = await startTransportServer({
    SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.port}?tls=insecure`,
    MAX_DELIVERY_AGE: '3s',
  });
  x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
});
afterAll(async () => {
  await server?.close();
  await sink?.close();
});

async function send(to: string[]): Promise<string> {
  return (await server.api(alice.token).post('/api/messages/send', sendBody(to))).body.data.messageId;
}

describe('delivery lifecycle', () => {
  it('backs off exponentially with jitter, capped', () => {
    const policy = { baseMs: 1000, maxMs: 8000 };
    expect([1, 2, 3, 4, 5, 9].map((n) => retryDelayMs(n, policy, () => 0))).toEqual([
      500, 1000, 2000, 4000, 4000, 4000,
    ]);
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, policy, () => 0.999999))).toEqual([1000, 2000, 4000, 8000, 8000]);
    const spread = new Set(Array.from({ length: 50 }, () => retryDelayMs(3, policy)));
    expect(spread.size).toBeGreaterThan(10);
  });

  it('gives up on a recipient still failing temporarily after MAX_DELIVERY_AGE, and bounces it (5.4.7)', async () => {
    sink.script({ rcpt: { 'slow@remote.example': '421 4.4.2 Try later' } });
    const id = await send(['slow@remote.example']);
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'failed', 'given up', 20_000);
    const [r] = await recipientsOfMessage(server, id);
    expect(r.status).toBe('failed');
    expect(r.remote_reply).toMatch(/^421 4\.4\.2 Try later \(given up after/);
    expect(r.attempts).toBeGreaterThan(1);
    const [bounce] =
      await q`select raw_blob_key from message where mailbox_id = ${alice.mailboxId} and in_reply_to_message_id = ${id}`;
    expect((await server.runtime.services.blobs.get(bounce.raw_blob_key)).toString()).toContain('Status: 5.4.7');
    sink.script({});
  });

  it('bounces an unknown address of a hosted domain at once', async () => {
    const id = await send([`nobody@${x.name}`]);
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'failed', 'failed');
    const [bounce] =
      await q`select body_text from message where mailbox_id = ${alice.mailboxId} and in_reply_to_message_id = ${id}`;
    expect(bounce.body_text).toContain(`<nobody@${x.name}>: 550 5.1.1 No such mailbox here`);
  });

  it('retries the job of a crashed worker once its lease expires, sending each recipient once', async () => {
    const id = await send(['one@remote.example', 'two@remote.example']);
    const { db } = server.runtime.services;
    const crashed = await claimDueJob(db, 'crashed', 800, new Date());
    expect(crashed?.messageId).toBe(id);
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'rescued');
    expect([sink.copiesFor('one@remote.example'), sink.copiesFor('two@remote.example')]).toEqual([1, 1]);
    // The crashed worker wakes up: its lease is gone, it can neither renew nor send.
    expect(await renewLease(db, crashed!, 'crashed', 30_000, new Date())).toBe(false);
    const [job] = await q`select status, locked_by from outbox_job where message_id = ${id}`;
    expect(job).toEqual({ status: 'done', locked_by: 'test-worker' });
  });

  it('does not send again what a second worker already delivered', async () => {
    const id = await send(['three@remote.example']);
    const workers = [fastWorker(server, 'w1'), fastWorker(server, 'w2'), fastWorker(server, 'w3')];
    workers.forEach((w) => w.start());
    try {
      await waitFor(async () => (await statusOf(id)) === 'delivered', 20_000, 'delivered');
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    expect(sink.copiesFor('three@remote.example')).toBe(1);
  });
});
