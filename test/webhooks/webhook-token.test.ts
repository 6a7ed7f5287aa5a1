import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { startTestServer, type TestServer } from '../support/harness.js';
import { waitFor } from '../delivery/helpers.js';

// A webhook speaks for the token that registered it (docs/webhooks.md, "Who a webhook speaks
// for"): once that token is disabled, deleted or expired nothing more is POSTed, and the webhook
// shows why; the mailbox's other WebhookManage tokens and the domain token see and remove it.

interface Received {
  path: string;
  event: { type: string; mailboxId: string; data: Record<string, unknown> };
}

let server: TestServer;
let rxServer: http.Server;
const received: Received[] = [];
let base: string;
type Box = Awaited<ReturnType<TestServer['createMailbox']>>;
let domain: Awaited<ReturnType<TestServer['createDomain']>>;
let alice: Box;
let bob: Box;

beforeAll(async () => {
  rxServer = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', event: JSON.parse(body) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => rxServer.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(rxServer.address() as { port: number }).port}`;
  server = await startTestServer({
    roles: ['api', 'worker'],
    env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true', WORKER_POLL_INTERVAL: '100ms', SEND_RATE_LIMIT_PER_MINUTE: '10000' },
  });
  domain = await server.createDomain();
  alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
});
afterAll(async () => {
  await server?.close();
  await new Promise<void>((r) => rxServer?.close(() => r()));
});

const tokensOf = (mailboxId: string) => `/api/domain/mailboxes/${mailboxId}/access-tokens`;

/** A child token of bob's with WebhookManage, minted by the domain token as an admin would. */
async function hookToken(name: string, expiresAtTs?: number): Promise<{ tokenId: string; token: string }> {
  const res = await server.api(domain.token).post(tokensOf(bob.mailboxId), {
    tokenName: name,
    scopes: ['MailboxRead', 'WebhookManage'],
    ...(expiresAtTs ? { expiresAtTs } : {}),
  });
  expect(res.status).toBe(201);
  return { tokenId: res.body.data.tokenId, token: res.body.data.accessToken };
}

const send = async (subject: string) =>
  expect(
    (await server.api(alice.token).post('/api/messages/send', { toAddress: bob.address, subject, bodyText: 'hi' }))
      .status,
  ).toBe(202);

const subjectsAt = (path: string) =>
  received
    .filter((r) => r.path === path && r.event.type === 'message.received')
    .map((r) => (r.event.data as { subject?: string }).subject);

async function viewOf(token: string, via: 'mailbox' | 'domain', webhookId: string) {
  const items = (await server.api(token).get(`/api/${via}/webhooks`)).body.data.items as {
    webhookId: string;
    disabledAtTs: number | null;
    disabledReason: string | null;
  }[];
  return items.find((w) => w.webhookId === webhookId);
}

/** Registers a webhook with `token`, proves it delivers, then runs `revoke` and proves it stops. */
async function stopsAfter(path: string, token: string, revoke: () => Promise<void>) {
  const created = await server.api(token).post('/api/mailbox/webhooks', { url: `${base}${path}` });
  expect(created.status).toBe(201);
  const webhookId = created.body.data.webhookId as string;
  await send(`${path} before`);
  await waitFor(async () => subjectsAt(path).includes(`${path} before`), 15_000, 'the first delivery');
  await revoke();
  await send(`${path} after`);
  const disabled = await waitFor(
    async () => {
      const w = await viewOf(domain.token, 'domain', webhookId);
      return w?.disabledAtTs ? w : undefined;
    },
    15_000,
    'the webhook disabled',
  );
  expect(disabled.disabledReason).toMatch(/token that registered this webhook is disabled, deleted or expired/);
  // Give the worker time to have sent it, had it been going to: the later mail never arrives.
  await new Promise((r) => setTimeout(r, 1_000));
  expect(subjectsAt(path)).toEqual([`${path} before`]);
  // The mailbox learns of it as of any disabled webhook.
  const events = (await server.api(bob.token).get('/api/events?after=0&limit=200')).body.data.items as {
    type: string;
    data: { webhookId?: string };
  }[];
  expect(events.some((e) => e.type === 'webhook.disabled' && e.data.webhookId === webhookId)).toBe(true);
  return webhookId;
}

describe('a webhook and the token that registered it', () => {
  it('stops delivering once that token is disabled', async () => {
    const child = await hookToken('hooks-disabled');
    await stopsAfter('/disabled', child.token, async () => {
      expect((await server.api(domain.token).post(`${tokensOf(bob.mailboxId)}/${child.tokenId}/disable`)).status).toBe(
        200,
      );
    });
  });

  it('stops delivering once that token is deleted', async () => {
    const child = await hookToken('hooks-deleted');
    await stopsAfter('/deleted', child.token, async () => {
      expect((await server.api(domain.token).delete(`${tokensOf(bob.mailboxId)}/${child.tokenId}`)).status).toBe(200);
      expect((await server.api(child.token).get('/api/mailbox/webhooks')).status).toBe(401);
    });
  });

  it('stops delivering once that token has expired', async () => {
    const child = await hookToken('hooks-expiring', Date.now() + 2_500);
    await stopsAfter('/expired', child.token, async () => {
      await waitFor(
        async () => (await server.api(child.token).get('/api/mailbox/webhooks')).status === 401,
        10_000,
        'the token expired',
      );
    });
  });

  it("is listed and removed by the mailbox's other WebhookManage tokens and by the domain token", async () => {
    const maker = await hookToken('hooks-maker');
    const other = await hookToken('hooks-other');
    const one = (await server.api(maker.token).post('/api/mailbox/webhooks', { url: `${base}/shared-1` })).body.data;
    const two = (await server.api(maker.token).post('/api/mailbox/webhooks', { url: `${base}/shared-2` })).body.data;
    expect(await viewOf(other.token, 'mailbox', one.webhookId)).toMatchObject({ webhookId: one.webhookId });
    expect(await viewOf(domain.token, 'domain', two.webhookId)).toMatchObject({ webhookId: two.webhookId });
    expect((await server.api(other.token).delete(`/api/mailbox/webhooks/${one.webhookId}`)).status).toBe(200);
    expect((await server.api(domain.token).delete(`/api/domain/webhooks/${two.webhookId}`)).status).toBe(200);
    expect(await viewOf(maker.token, 'mailbox', one.webhookId)).toBeUndefined();
    expect(await viewOf(maker.token, 'mailbox', two.webhookId)).toBeUndefined();
    // Another mailbox's token never sees them.
    const aliceHooks = (
      await server.api(domain.token).post(tokensOf(alice.mailboxId), {
        tokenName: 'alice-hooks',
        scopes: ['MailboxRead', 'WebhookManage'],
      })
    ).body.data.accessToken as string;
    const three = (await server.api(maker.token).post('/api/mailbox/webhooks', { url: `${base}/shared-3` })).body.data;
    expect(await viewOf(aliceHooks, 'mailbox', three.webhookId)).toBeUndefined();
    expect((await server.api(aliceHooks).delete(`/api/mailbox/webhooks/${three.webhookId}`)).status).toBe(404);
  });
});
