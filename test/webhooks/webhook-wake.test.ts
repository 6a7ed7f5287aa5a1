import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { startTestServer, type TestServer } from '../support/harness.js';
import { seedBulk } from '../support/seed-messages.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';
import { WebhookWorker } from '../../src/core/flows/webhooks/webhook-worker.js';
import { WebhookWake } from '../../src/core/flows/webhooks/webhook-wake.js';
import { ManualClock } from '../support/tenants.js';
import { testWebhookWorkerOptions } from './worker-options.js';

// What wakes the webhook worker (webhook-wake.ts): the events some webhook wants, by the event
// log's own fan-out rule. Waking on every event would have every loop of every worker process run
// a claim (under one global claim lock) for each message of every mailbox, webhooks or not. The
// worker here never polls (an hour's interval), so each claim it runs was woken by an event.

let server: TestServer;
let rx: http.Server;
const received: string[] = [];
const q = rowsOf(() => server);

/** A worker of four loops whose claims are counted. */
class CountingWorker extends WebhookWorker {
  claims = 0;
  override async runOnce(): Promise<boolean> {
    this.claims++;
    return super.runOnce();
  }
}

beforeAll(async () => {
  rx = http.createServer((req, res) => {
    received.push(String(req.headers['webhook-id']));
    req.resume();
    res.writeHead(200).end();
  });
  await new Promise<void>((r) => rx.listen(0, '127.0.0.1', () => r()));
  server = await startTestServer({ roles: ['api'], env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true' } });
});
afterAll(async () => {
  await server?.close();
  rx?.closeAllConnections();
  await new Promise<void>((r) => rx?.close(() => r()));
});

/** Marks each of the mailbox's messages read: one event each. */
async function readAll(box: { mailboxId: string; token: string }): Promise<void> {
  for (const { id } of await q`select id from message where mailbox_id = ${box.mailboxId} order by id`)
    expect((await server.api(box.token).put(`/api/messages/${id}/read-state`, { isRead: true })).status).toBe(200);
}

describe('waking the webhook worker', () => {
  it('claims for the events of a mailbox a webhook listens to, not for the others', async () => {
    const quiet = await server.createDomain();
    const hooked = await server.createDomain();
    const a = await server.createMailbox(quiet.token, `quiet@${quiet.name}`);
    const b = await server.createMailbox(hooked.token, `hooked@${hooked.name}`);
    const port = (rx.address() as { port: number }).port;
    expect(
      (await server.api(hooked.token).post('/api/domain/webhooks', { url: `http://127.0.0.1:${port}/wake` })).status,
    ).toBe(201);
    for (const box of [a, b]) await seedBulk(server, box.mailboxId, 5);
    const { services } = server.runtime;
    const worker = new CountingWorker(
      services,
      services.webhookCipher,
      testWebhookWorkerOptions({ workerId: 'wake-test', pollIntervalMs: 3_600_000, concurrency: 4 }),
    );
    worker.start();
    try {
      // The loops' first look at start, then nothing more: five events of a mailbox no webhook hears.
      await waitFor(async () => worker.claims >= 4 || undefined, 5_000, 'the first look');
      const atStart = worker.claims;
      await readAll(a);
      await new Promise((r) => setTimeout(r, 500));
      expect(worker.claims).toBe(atStart);
      // The hooked mailbox's five events wake the worker, which delivers each.
      await readAll(b);
      await waitFor(async () => received.length >= 5 || undefined, 10_000, 'five deliveries');
      expect(received).toHaveLength(5);
      expect(worker.claims).toBeGreaterThan(atStart);
    } finally {
      await worker.stop();
    }
  });

  it('remembers an answer for its TTL, then asks again, by event type as the fan-out does', async () => {
    const clock = new ManualClock();
    const domain = await server.createDomain();
    const box = await server.createMailbox(domain.token, `later@${domain.name}`);
    const wake = new WebhookWake(server.runtime.services.db, clock, 2_000);
    expect(await wake.wanted(box.mailboxId, 'message.received')).toBe(false);
    const port = (rx.address() as { port: number }).port;
    const hook = { url: `http://127.0.0.1:${port}/later`, eventTypes: ['message.received'] };
    expect((await server.api(domain.token).post('/api/domain/webhooks', hook)).status).toBe(201);
    expect(await wake.wanted(box.mailboxId, 'message.received')).toBe(false); // still the remembered answer
    clock.advance(2_000);
    expect(await wake.wanted(box.mailboxId, 'message.received')).toBe(true);
    // A type the webhook does not take queues no delivery, so it wakes nothing either.
    expect(await wake.wanted(box.mailboxId, 'message.read-state')).toBe(false);
  });
});
