import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintMailboxToken } from '../support/seed-messages.js';
import { waitFor } from '../delivery/helpers.js';

// Webhooks end to end: a real HTTP receiver on loopback (ALLOW_PRIVATE_NETWORK_TARGETS=true, as in
// development), real mail between hosted mailboxes, the worker role delivering the outbox, and
// every signature checked with the standardwebhooks library's own verifier.

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  event: { eventId: string; type: string; mailboxId: string; data: Record<string, unknown> };
}

/** A receiver whose answer per path can be switched (200, 503, or a closed door). */
function receiver() {
  const received: Received[] = [];
  const status = new Map<string, number>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const code = status.get(req.url ?? '') ?? 200;
      if (code === 200)
        received.push({
          path: req.url ?? '',
          headers: req.headers as Record<string, string>,
          body,
          event: JSON.parse(body),
        });
      res.writeHead(code).end();
    });
  });
  return {
    received,
    status,
    listen: () => new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as any).port))),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let server: TestServer;
let rx: ReturnType<typeof receiver>;
let base: string;
let domain: Awaited<ReturnType<TestServer['createDomain']>>;
type Box = Awaited<ReturnType<TestServer['createMailbox']>>;
let alice: Box;
let bob: Box;
let bobHooks: string;

/** A server with the worker role and Alice and Bob in one domain; WEBHOOK_DISABLE_AFTER as given. */
async function start(disableAfter: string) {
  server = await startTestServer({
    roles: ['api', 'worker'],
    env: {
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      WORKER_POLL_INTERVAL: '100ms',
      WEBHOOK_RETRY_BASE: '100ms',
      WEBHOOK_RETRY_MAX: '400ms',
      WEBHOOK_DISABLE_AFTER: disableAfter,
      SEND_RATE_LIMIT_PER_MINUTE: '10000',
    },
  });
  domain = await server.createDomain();
  alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
  bobHooks = await mintMailboxToken(server, bob.mailboxId, ['MailboxRead', 'WebhookManage']);
}

beforeAll(async () => {
  rx = receiver();
  base = `http://127.0.0.1:${await rx.listen()}`;
  // Long enough that the receiver-down test (20 sends while down) never reaches it on a slow engine.
  await start('30s');
});
afterAll(async () => {
  await server?.close();
  await rx?.close();
});

const send = async (from: Box, to: Box, subject: string) => {
  const res = await server
    .api(from.token)
    .post('/api/messages/send', { toAddress: to.address, subject, bodyText: 'hi' });
  expect(res.status).toBe(202);
};
const verified = (secret: string, r: Received) =>
  new Webhook(secret).verify(r.body, {
    'webhook-id': r.headers['webhook-id']!,
    'webhook-timestamp': r.headers['webhook-timestamp']!,
    'webhook-signature': r.headers['webhook-signature']!,
  });

describe('webhook registration', () => {
  it('needs WebhookManage, which a bootstrap token lacks; the secret is shown once', async () => {
    const refused = await server.api(bob.token).post('/api/mailbox/webhooks', { url: `${base}/x` });
    expect(refused.status).toBe(403);
    const created = await server.api(bobHooks).post('/api/mailbox/webhooks', { url: `${base}/reg` });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    expect(created.body.data).toMatchObject({ url: `${base}/reg`, eventTypes: null, scope: 'mailbox' });
    expect(created.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    const list = await server.api(bobHooks).get('/api/mailbox/webhooks');
    expect(list.body.data.items.map((w: { webhookId: string }) => w.webhookId)).toContain(created.body.data.webhookId);
    expect(JSON.stringify(list.body)).not.toContain(created.body.data.secret);
    const rows = await server.runtime.services.db.rows<{ secret_cipher: string }>(
      (await import('../../src/storage/database.js'))
        .sql`select secret_cipher from webhook where id = ${created.body.data.webhookId}`,
    );
    expect(rows[0]!.secret_cipher).not.toContain(created.body.data.secret.slice(6));
    const gone = await server.api(bobHooks).delete(`/api/mailbox/webhooks/${created.body.data.webhookId}`);
    expect(gone.body.data).toEqual({ webhookId: created.body.data.webhookId, deleted: true });
    expect((await server.api(bobHooks).delete(`/api/mailbox/webhooks/${created.body.data.webhookId}`)).status).toBe(
      404,
    );
  });

  it('refuses bad URLs and mailboxes out of reach', async () => {
    for (const url of ['ftp://x.example/', 'not a url', 'http://user:pw@127.0.0.1/'])
      expect((await server.api(bobHooks).post('/api/mailbox/webhooks', { url })).status).toBe(400);
    const other = await server.api(bobHooks).post('/api/mailbox/webhooks', {
      url: `${base}/x`,
      mailboxAddresses: [alice.address],
    });
    expect(other.status).toBe(400);
    const unknown = await server.api(domain.token).post('/api/domain/webhooks', {
      url: `${base}/x`,
      mailboxAddresses: [`nobody@${domain.name}`],
    });
    expect(unknown.status).toBe(404);
  });
});

describe('webhook delivery', () => {
  it('POSTs each event with the real-time eventId, signed (verified by the library)', async () => {
    const created = (await server.api(bobHooks).post('/api/mailbox/webhooks', { url: `${base}/sig` })).body.data;
    await send(alice, bob, 'signed one');
    const got = await waitFor(async () =>
      rx.received.find((r) => r.path === '/sig' && r.event.type === 'message.received'),
    );
    expect(verified(created.secret, got)).toMatchObject({ type: 'message.received', mailboxId: bob.mailboxId });
    expect(() => verified(`whsec_${Buffer.alloc(24, 1).toString('base64')}`, got)).toThrow();
    const events = await server.api(bob.token).get('/api/events?after=0&limit=200');
    const same = events.body.data.items.find((e: { eventId: string }) => e.eventId === got.event.eventId);
    expect(same).toEqual(got.event);
    expect(got.headers['webhook-id']).toBe(`${bob.mailboxId}_${got.event.eventId}`);
    await server.api(bobHooks).delete(`/api/mailbox/webhooks/${created.webhookId}`);
  });

  it('receiver down, then up: every event arrives, in order per mailbox', async () => {
    rx.status.set('/down', 503);
    const created = (
      await server.api(domain.token).post('/api/domain/webhooks', {
        url: `${base}/down`,
        eventTypes: ['message.received'],
        mailboxAddresses: [bob.address, alice.address],
      })
    ).body.data;
    for (let i = 0; i < 10; i++) {
      await send(alice, bob, `down ${i}`);
      await send(bob, alice, `down back ${i}`);
    }
    await new Promise((r) => setTimeout(r, 1_000));
    expect(rx.received.filter((r) => r.path === '/down')).toHaveLength(0);
    const failing = (await server.api(domain.token).get('/api/domain/webhooks')).body.data.items.find(
      (w: { webhookId: string }) => w.webhookId === created.webhookId,
    );
    expect(failing.failingSinceTs).not.toBeNull();
    expect(failing.lastError).toBe('HTTP 503');
    rx.status.delete('/down');
    const all = await waitFor(
      async () => {
        const got = rx.received.filter((r) => r.path === '/down');
        const distinct = new Set(got.map((r) => r.headers['webhook-id']));
        return distinct.size >= 20 ? got : undefined;
      },
      60_000,
      '20 events after the receiver came back',
    );
    for (const box of [alice, bob]) {
      const seqs = all.filter((r) => r.event.mailboxId === box.mailboxId).map((r) => Number(r.event.eventId));
      expect(seqs).toHaveLength(10);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
    expect(all.every((r) => r.event.type === 'message.received')).toBe(true);
    for (const r of all) expect(verified(created.secret, r)).toBeTruthy();
    const healthy = (await server.api(domain.token).get('/api/domain/webhooks')).body.data.items.find(
      (w: { webhookId: string }) => w.webhookId === created.webhookId,
    );
    expect(healthy.failingSinceTs).toBeNull();
    await server.api(domain.token).delete(`/api/domain/webhooks/${created.webhookId}`);
  }, 120_000);
});

describe('a failing webhook', () => {
  // A server of its own with a short WEBHOOK_DISABLE_AFTER, so the test waits 2 s of failures, not 30.
  beforeAll(async () => {
    await server.close();
    await start('2s');
  });

  it('a webhook failing for WEBHOOK_DISABLE_AFTER is disabled, with a webhook.disabled event', async () => {
    rx.status.set('/dead', 500);
    const created = (await server.api(bobHooks).post('/api/mailbox/webhooks', { url: `${base}/dead` })).body.data;
    await send(alice, bob, 'to a dead hook');
    const disabled = await waitFor(
      async () => {
        const items = (await server.api(bobHooks).get('/api/mailbox/webhooks')).body.data.items;
        const w = items.find((x: { webhookId: string }) => x.webhookId === created.webhookId);
        return w?.disabledAtTs ? w : undefined;
      },
      75_000,
      'the webhook to be disabled',
    );
    expect(disabled.disabledReason).toMatch(/HTTP 500/);
    const events = (await server.api(bob.token).get('/api/events?after=0&limit=200')).body.data.items;
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'webhook.disabled',
        data: expect.objectContaining({ webhookId: created.webhookId }),
      }),
    );
    rx.status.delete('/dead');
  }, 120_000);
});
