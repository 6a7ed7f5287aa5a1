import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { startTestServer, type TestServer } from '../support/harness.js';
import { seedBulk } from '../support/seed-messages.js';
import { subscribe } from '../realtime/client.js';
import { rowsOf } from '../delivery/helpers.js';
import { recordFigure } from './support/figures.js';
import { scale } from './support/scale.js';

// 1 000 webhook events queued for a receiver that takes a second per request must not delay
// Socket.IO: the webhook worker runs beside the hub in one process (roles api, realtime, worker),
// and the latency from a read-state change to its Socket.IO event is measured while it drains.

const SUITE = 'webhooks';
const EVENTS = 1_000;
const PROBES = scale(30, 100);

let server: TestServer;
let slow: http.Server;
let hits = 0;
const q = rowsOf(() => server);

beforeAll(async () => {
  slow = http.createServer((req, res) => {
    req.resume();
    hits++;
    setTimeout(() => res.writeHead(200).end(), 1_000);
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', () => r()));
  server = await startTestServer({
    roles: ['api', 'realtime', 'worker'],
    env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true', WORKER_POLL_INTERVAL: '100ms' },
  });
});
afterAll(async () => {
  await server?.close();
  await new Promise<void>((r) => slow?.close(() => r()));
});

describe('a slow webhook receiver', () => {
  it('does not delay Socket.IO delivery (p99 recorded)', async () => {
    const domain = await server.createDomain();
    const box = await server.createMailbox(domain.token, `slow@${domain.name}`);
    await seedBulk(server, box.mailboxId, EVENTS + 2 * PROBES);
    const ids = (await q`select id from message where mailbox_id = ${box.mailboxId} order by id`).map((r) => r.id);
    const port = (slow.address() as { port: number }).port;
    const hook = await server.api(domain.token).post('/api/domain/webhooks', { url: `http://127.0.0.1:${port}/slow` });
    expect(hook.status).toBe(201);
    const rec = await subscribe(server.url, { auth: { token: box.token } });
    const probe = async (probeIds: string[]) => {
      const latencies: number[] = [];
      for (const id of probeIds) {
        const before = rec.events.length;
        const started = performance.now();
        await server.api(box.token).put(`/api/messages/${id}/read-state`, { isRead: true });
        await rec.until(() => rec.events.length > before, 10_000, 'the probe event');
        latencies.push(performance.now() - started);
      }
      const sorted = [...latencies].sort((a, b) => a - b);
      return { p50: sorted[Math.ceil(sorted.length * 0.5) - 1]!, p99: sorted[Math.ceil(sorted.length * 0.99) - 1]! };
    };
    try {
      // The same probe without a backlog first: the figure is the difference the backlog makes.
      const baseline = await probe(ids.slice(EVENTS + PROBES));
      // 1 000 events in one call: each becomes a webhook delivery to the slow receiver.
      const bulk = await server
        .api(box.token)
        .post('/api/messages/bulk-read-state', { ids: ids.slice(0, EVENTS), isRead: true });
      expect(bulk.body.data.succeededItems).toHaveLength(EVENTS);
      await rec.until(() => rec.events.length >= EVENTS, 60_000, 'the bulk events on the socket');
      const loaded = await probe(ids.slice(EVENTS, EVENTS + PROBES));
      const backlog = Number(
        (
          await q`select count(*) as n from webhook_delivery where webhook_id = ${hook.body.data.webhookId} and status = 'pending'`
        )[0].n,
      );
      const limit = 2 * baseline.p99 + 100;
      recordFigure({
        suite: SUITE,
        name:
          `Socket.IO event latency (change → event) with ${backlog} webhook deliveries pending to a 1 s receiver ` +
          `(p50 ${Math.round(loaded.p50)} ms; without backlog p50 ${Math.round(baseline.p50)} ms, p99 ${Math.round(baseline.p99)} ms)`,
        value: `p99 ${Math.round(loaded.p99)} ms`,
        target: `≤ 2 × p99 without backlog + 100 ms (${Math.round(limit)} ms)`,
        pass: loaded.p99 <= limit,
      });
      const p99 = loaded.p99;
      expect(backlog).toBeGreaterThan(EVENTS / 2); // the receiver really was still behind
      expect(hits).toBeGreaterThan(0);
      expect(p99).toBeLessThanOrEqual(2_000);
    } finally {
      rec.socket.close();
    }
  });
});
