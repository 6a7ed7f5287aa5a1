import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import { startTestServer, type TestServer } from '../support/harness.js';
import { seedBulk } from '../support/seed-messages.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';

// Webhooks between tenants (docs/webhooks.md, "Limits" and "Fairness"): registrations are capped
// per mailbox and per domain, a domain has at most WEBHOOK_IN_FLIGHT_PER_DOMAIN deliveries in
// flight, and a failing endpoint's circuit keeps its deliveries waiting (not lost) during its backoff.

interface Hit {
  path: string;
  at: number;
  mailboxId: string;
}

let server: TestServer;
let rx: http.Server;
let blackHole: net.Server;
const held: net.Socket[] = [];
const hits: Hit[] = [];
const status = new Map<string, number>();
let base: string;
let holeBase: string;
const q = rowsOf(() => server);

beforeAll(async () => {
  rx = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hits.push({ path: req.url ?? '', at: Date.now(), mailboxId: JSON.parse(body).mailboxId });
      res.writeHead(status.get(req.url ?? '') ?? 204).end();
    });
  });
  await new Promise<void>((r) => rx.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(rx.address() as net.AddressInfo).port}`;
  blackHole = net.createServer((s) => {
    held.push(s);
    s.resume();
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', () => r()));
  holeBase = `http://127.0.0.1:${(blackHole.address() as net.AddressInfo).port}`;
  server = await startTestServer({
    roles: ['api', 'worker'],
    env: {
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      WORKER_POLL_INTERVAL: '100ms',
      WEBHOOK_MAX_PER_MAILBOX: '2',
      WEBHOOK_MAX_PER_DOMAIN: '3',
      WEBHOOK_IN_FLIGHT_PER_DOMAIN: '1',
      WEBHOOK_CONCURRENCY: '3',
      WEBHOOK_TIMEOUT: '4s',
      WEBHOOK_RETRY_BASE: '3s',
      WEBHOOK_RETRY_MAX: '3s',
    },
  });
});
afterAll(async () => {
  await server?.close();
  for (const s of held) s.destroy();
  await new Promise<void>((r) => blackHole?.close(() => r()));
  await new Promise<void>((r) => rx?.close(() => r()));
});

/** Marks one seeded message of the mailbox read: one event. */
async function touch(box: { mailboxId: string; token: string }, nth: number) {
  const id = (await q`select id from message where mailbox_id = ${box.mailboxId} order by id`)[nth]!.id as string;
  expect((await server.api(box.token).put(`/api/messages/${id}/read-state`, { isRead: true })).status).toBe(200);
}

describe('webhook limits', () => {
  it('caps live webhooks per mailbox and per domain with WEBHOOK_LIMIT_REACHED', async () => {
    const domain = await server.createDomain();
    const a = await server.createMailbox(domain.token, `cap-a@${domain.name}`);
    const b = await server.createMailbox(domain.token, `cap-b@${domain.name}`);
    const tokenOf = async (mailboxId: string) =>
      (
        await server.api(domain.token).post(`/api/domain/mailboxes/${mailboxId}/access-tokens`, {
          tokenName: 'hooks',
          scopes: ['WebhookManage'],
        })
      ).body.data.accessToken as string;
    const aHooks = await tokenOf(a.mailboxId);
    const bHooks = await tokenOf(b.mailboxId);
    for (let i = 0; i < 2; i++)
      expect((await server.api(aHooks).post('/api/mailbox/webhooks', { url: `${base}/cap-a${i}` })).status).toBe(201);
    const overMailbox = await server.api(aHooks).post('/api/mailbox/webhooks', { url: `${base}/cap-a2` });
    expect(overMailbox.status).toBe(409);
    expect(overMailbox.body.errorCode).toBe('WEBHOOK_LIMIT_REACHED');
    expect(overMailbox.body.errMsg).toContain('WEBHOOK_MAX_PER_MAILBOX');
    // The domain's cap counts its mailboxes' webhooks: one more fits, then none.
    expect((await server.api(bHooks).post('/api/mailbox/webhooks', { url: `${base}/cap-b0` })).status).toBe(201);
    const overDomain = await server.api(domain.token).post('/api/domain/webhooks', { url: `${base}/cap-d` });
    expect(overDomain.status).toBe(409);
    expect(overDomain.body.errMsg).toContain('WEBHOOK_MAX_PER_DOMAIN');
    // Removing one makes room again.
    const list = (await server.api(domain.token).get('/api/domain/webhooks')).body.data.items;
    expect(list).toHaveLength(3);
    await server.api(domain.token).delete(`/api/domain/webhooks/${list[0].webhookId}`);
    expect((await server.api(domain.token).post('/api/domain/webhooks', { url: `${base}/cap-d` })).status).toBe(201);
  });
});

describe('webhook fairness', () => {
  it("holds one domain to WEBHOOK_IN_FLIGHT_PER_DOMAIN, so another domain's delivery goes at once", async () => {
    const flood = await server.createDomain();
    const floodBox = await server.createMailbox(flood.token, `flood@${flood.name}`);
    const calm = await server.createDomain();
    const calmBox = await server.createMailbox(calm.token, `calm@${calm.name}`);
    await seedBulk(server, floodBox.mailboxId, 1);
    await seedBulk(server, calmBox.mailboxId, 1);
    for (let i = 0; i < 3; i++)
      expect((await server.api(flood.token).post('/api/domain/webhooks', { url: `${holeBase}/hole${i}` })).status).toBe(
        201,
      );
    expect((await server.api(calm.token).post('/api/domain/webhooks', { url: `${base}/calm` })).status).toBe(201);
    const connectionsBefore = held.length;
    await touch(floodBox, 0);
    await new Promise((r) => setTimeout(r, 300));
    const leased = async () =>
      Number(
        (
          await q`select count(*) as n from webhook_delivery d join webhook w on w.id = d.webhook_id
            where w.domain_id = ${flood.domainId} and d.status = 'pending' and d.lease_until is not null`
        )[0].n,
      );
    // Three deliveries due and three worker slots, but the domain gets one.
    expect(await leased()).toBe(1);
    expect(held.length - connectionsBefore).toBe(1);
    const started = Date.now();
    await touch(calmBox, 0);
    const hit = await waitFor(
      async () => hits.find((h) => h.path === '/calm' && h.mailboxId === calmBox.mailboxId),
      10_000,
      'the calm domain delivery',
    );
    // Well inside the 4 s the flood's attempt still hangs.
    expect(hit.at - started).toBeLessThan(2_000);
    expect(await leased()).toBe(1);
  });

  it('skips a failing endpoint during its backoff; its deliveries wait and then all arrive', async () => {
    const domain = await server.createDomain();
    const boxes = await Promise.all(
      [0, 1, 2].map((i) => server.createMailbox(domain.token, `circuit${i}@${domain.name}`)),
    );
    for (const box of boxes) await seedBulk(server, box.mailboxId, 1);
    status.set('/circuit', 503);
    expect((await server.api(domain.token).post('/api/domain/webhooks', { url: `${base}/circuit` })).status).toBe(201);
    const atCircuit = () => hits.filter((h) => h.path === '/circuit');
    await touch(boxes[0]!, 0);
    const first = await waitFor(async () => atCircuit()[0], 10_000, 'the first failed attempt');
    // WEBHOOK_RETRY_BASE 3 s, half of it fixed: the circuit stays open at least 1.5 s after a failure.
    const quietUntil = first.at + 1_400;
    // Two more mailboxes' events are due now, for the same failing endpoint.
    await touch(boxes[1]!, 0);
    await touch(boxes[2]!, 0);
    await new Promise((r) => setTimeout(r, Math.max(0, quietUntil - Date.now())));
    expect(atCircuit().filter((h) => h.at > first.at && h.at < quietUntil)).toEqual([]);
    status.delete('/circuit');
    const delivered = await waitFor(
      async () => {
        const got = new Set(
          atCircuit()
            .filter((h) => h.at > first.at)
            .map((h) => h.mailboxId),
        );
        return got.size === 3 ? got : undefined;
      },
      30_000,
      'every mailbox delivered once the endpoint answers',
    );
    expect([...delivered].sort()).toEqual(boxes.map((b) => b.mailboxId).sort());
  }, 60_000);
});
