import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { startTestServer, type TestServer } from '../support/harness.js';
import { seedBulk } from '../support/seed-messages.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';
import { WebhookWorker, webhookLeaseMs } from '../../src/core/flows/webhooks/webhook-worker.js';
import { testWebhookWorkerOptions } from './worker-options.js';

// The webhook lease rule (docs/api.md, "Webhooks"): a claimed delivery is leased for
// max(WORKER_LEASE, 3 × WEBHOOK_TIMEOUT). Two workers share one outbox with a WORKER_LEASE far
// shorter than the receiver's answer time (but within WEBHOOK_TIMEOUT): were the lease only
// WORKER_LEASE, the second worker would retake an attempt still in flight and the receiver would
// hold two copies of one event at once.

const WORKER_LEASE_MS = 150;
const TIMEOUT_MS = 5_000;
const ANSWER_MS = 1_000;

let server: TestServer;
let rx: http.Server;
const inFlight = new Map<string, number>();
const received = new Map<string, number>();
let maxSameAtOnce = 0;
const workers: WebhookWorker[] = [];
const q = rowsOf(() => server);

beforeAll(async () => {
  rx = http.createServer((req, res) => {
    const id = String(req.headers['webhook-id']);
    inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
    maxSameAtOnce = Math.max(maxSameAtOnce, inFlight.get(id)!);
    received.set(id, (received.get(id) ?? 0) + 1);
    req.resume();
    setTimeout(() => {
      inFlight.set(id, inFlight.get(id)! - 1);
      res.writeHead(200).end();
    }, ANSWER_MS);
  });
  await new Promise<void>((r) => rx.listen(0, '127.0.0.1', () => r()));
  // The api role only: the two workers below are the only ones delivering.
  server = await startTestServer({ roles: ['api'], env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true' } });
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await server?.close();
  rx?.closeAllConnections();
  await new Promise<void>((r) => rx?.close(() => r()));
});

describe('the webhook lease', () => {
  it('is max(WORKER_LEASE, 3 × WEBHOOK_TIMEOUT)', () => {
    expect(webhookLeaseMs(60_000, 10_000)).toBe(60_000);
    expect(webhookLeaseMs(150, 5_000)).toBe(15_000);
  });

  it('keeps a second worker off an attempt in flight to a receiver slower than WORKER_LEASE', async () => {
    const domain = await server.createDomain();
    const a = await server.createMailbox(domain.token, `lease-a@${domain.name}`);
    const b = await server.createMailbox(domain.token, `lease-b@${domain.name}`);
    const port = (rx.address() as { port: number }).port;
    const hook = await server.api(domain.token).post('/api/domain/webhooks', { url: `http://127.0.0.1:${port}/lease` });
    expect(hook.status).toBe(201);
    for (const box of [a, b]) await seedBulk(server, box.mailboxId, 3);
    const { services } = server.runtime;
    for (const name of ['one', 'two']) {
      const w = new WebhookWorker(
        services,
        services.webhookCipher,
        testWebhookWorkerOptions({
          workerId: `lease-test-${name}`,
          leaseMs: WORKER_LEASE_MS,
          timeoutMs: TIMEOUT_MS,
          connectTimeoutMs: TIMEOUT_MS,
        }),
      );
      w.start();
      workers.push(w);
    }
    // Six events (one read-state change per message), three per mailbox.
    for (const box of [a, b]) {
      const ids = (await q`select id from message where mailbox_id = ${box.mailboxId} order by id`).map((r) => r.id);
      for (const id of ids)
        expect((await server.api(box.token).put(`/api/messages/${id}/read-state`, { isRead: true })).status).toBe(200);
    }
    const pending = async () =>
      Number(
        (
          await q`select count(*) as n from webhook_delivery where webhook_id = ${hook.body.data.webhookId} and status <> 'delivered'`
        )[0].n,
      );
    await waitFor(async () => ((await pending()) === 0 ? true : undefined), 60_000, 'every delivery done');
    expect(received.size).toBe(6);
    expect(maxSameAtOnce).toBe(1);
    expect([...received.values()].every((n) => n === 1)).toBe(true);
  }, 90_000);
});
