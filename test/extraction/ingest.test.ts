import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deliverToMx } from '../smtp/mx-peer.js';
import { waitFor } from '../delivery/helpers.js';
import { mcpClient, ok } from '../mcp/helpers.js';
import { jsonValue, sql } from '../../src/storage/database.js';

// Extraction at ingest, through both ingest paths (MX port and local delivery), read back from
// the detail, MCP get_message, and the waiting MCP tool get_verification_code.

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/extraction');
type Box = Awaited<ReturnType<TestServer['createMailbox']>>;

let server: TestServer;
let alice: Box;
let bob: Box;
let bobMcp: Client;

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'smtp', 'worker'],
    env: { SMTP_MX_PORT: '0', SMTP_SUBMISSION_PORT: '0', SEND_RATE_LIMIT_PER_MINUTE: '1000' },
  });
  const domain = await server.createDomain();
  alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
  bobMcp = await mcpClient(server, bob.token);
});
afterAll(async () => {
  await bobMcp?.close();
  await server?.close();
});

const mx = () => server.runtime.smtpPorts.mx!;
const fixture = (name: string, to = bob.address) =>
  readFileSync(path.join(FIXTURES, name), 'utf8').replace('{rcpt}', to);

async function newestInbound(box: Box, subject: string): Promise<any> {
  const found = await waitFor(async () => {
    const res = await server.api(box.token).get(`/api/messages?direction=inbound&limit=50`);
    return res.body.data.items.find((i: { subject: string }) => i.subject === subject);
  });
  return (await server.api(box.token).get(`/api/messages/${found.messageId}`)).body.data;
}

describe('extraction at ingest', () => {
  it('MX: the detail carries codes, classified links (List-Unsubscribe too) and the reply text', async () => {
    await deliverToMx(mx(), { from: 'noreply@github.com', to: bob.address }, fixture('01-github-verification.eml'));
    const otp = await newestInbound(bob, '[GitHub] Please verify your device');
    expect(otp.extracted.codes).toEqual(['482913']);
    expect(otp.extracted.links).toContainEqual({ url: 'https://github.com/settings/security', kind: 'other' });

    await deliverToMx(mx(), { from: 'news@startup.example', to: bob.address }, fixture('40-newsletter.eml'));
    const news = await newestInbound(bob, 'Our 2025 in numbers');
    expect(news.extracted.codes).toEqual([]);
    expect(news.extracted.links.slice(0, 2)).toEqual([
      { url: 'https://startup.example/lu/55123', kind: 'unsubscribe' },
      { url: 'mailto:unsubscribe@startup.example?subject=55123', kind: 'unsubscribe' },
    ]);

    await deliverToMx(mx(), { from: 'bob@corp.example', to: bob.address }, fixture('43-colleague-reply.eml'));
    const reply = await newestInbound(bob, 'Re: Lunch');
    expect(reply.extracted.replyText).toBe(
      "Sure, let's meet in room 3105 at 14:30. My extension is 4417 if anything changes.",
    );
    expect(reply.extracted.codes).toEqual([]);
  });

  it('local delivery: a hosted sender’s mail is extracted too; the sent copy has none', async () => {
    const sent = await server.api(alice.token).post('/api/messages/send', {
      toAddress: bob.address,
      subject: 'Your sign-in code',
      bodyText: 'Your sign-in code is 771204.\n\nConfirm here: https://alice.example/confirm?t=abc',
    });
    expect(sent.status).toBe(202);
    const got = await newestInbound(bob, 'Your sign-in code');
    expect(got.extracted).toEqual({
      codes: ['771204'],
      links: [{ url: 'https://alice.example/confirm?t=abc', kind: 'verification' }],
      replyText: 'Your sign-in code is 771204.\n\nConfirm here: https://alice.example/confirm?t=abc',
    });
    const own = await server.api(alice.token).get(`/api/messages/${sent.body.data.messageId}`);
    expect(own.body.data.extracted).toBeNull();
    const viaMcp = await ok(bobMcp, 'get_message', { messageId: got.messageId });
    expect(viaMcp.extracted.codes).toEqual(['771204']);
  });
});

describe('get_verification_code', () => {
  it('returns at once when a matching mail is there, again on a second call, and honours from/subject/since', async () => {
    const d = await server.createDomain();
    const carol = await server.createMailbox(d.token, `carol@${d.name}`);
    await server.api(alice.token).post('/api/messages/send', {
      toAddress: carol.address,
      subject: 'Acme verification code',
      bodyText: 'Your verification code is 246810.',
    });
    const client = await mcpClient(server, carol.token);
    try {
      const first = await ok(client, 'get_verification_code', { timeoutMs: 20_000 });
      expect(first).toMatchObject({ code: '246810', codes: ['246810'], timedOut: false });
      const started = performance.now();
      const again = await ok(client, 'get_verification_code', { timeoutMs: 20_000 });
      expect(again.code).toBe('246810');
      expect(again.message.messageId).toBe(first.message.messageId);
      expect(performance.now() - started).toBeLessThan(5_000); // at once, not after the timeout
      const wrongSender = await ok(client, 'get_verification_code', { from: 'nobody.example', timeoutMs: 0 });
      expect(wrongSender).toMatchObject({ code: null, timedOut: true });
      const wrongSubject = await ok(client, 'get_verification_code', { subjectContains: 'invoice', timeoutMs: 0 });
      expect(wrongSubject.code).toBeNull();
      const later = await ok(client, 'get_verification_code', { sinceTs: Date.now() + 60_000, timeoutMs: 0 });
      expect(later.code).toBeNull();
      // Deleted mail no longer answers.
      await server.api(carol.token).delete(`/api/messages/${first.message.messageId}`);
      expect((await ok(client, 'get_verification_code', { timeoutMs: 0 })).code).toBeNull();
    } finally {
      await client.close();
    }
  });

  it('waits for the code when it is not there yet (one call: sign up, wait, use it)', async () => {
    const d = await server.createDomain();
    const dave = await server.createMailbox(d.token, `dave@${d.name}`);
    const client = await mcpClient(server, dave.token);
    try {
      const waiting = ok(client, 'get_verification_code', { from: 'github.com', timeoutMs: 30_000 });
      await new Promise((r) => setTimeout(r, 300));
      // Mail without a code does not end the wait.
      await deliverToMx(
        mx(),
        { from: 'noreply@github.com', to: dave.address },
        fixture('40-newsletter.eml', dave.address),
      );
      await deliverToMx(
        mx(),
        { from: 'noreply@github.com', to: dave.address },
        fixture('01-github-verification.eml', dave.address),
      );
      const res = await waiting;
      expect(res).toMatchObject({ code: '482913', timedOut: false });
      expect(res.message.fromAddress).toBe('noreply@github.com');
    } finally {
      await client.close();
    }
  });

  it('the HTTP twin answers the same', async () => {
    const res = await server.api(bob.token).get('/api/messages/verification-code?timeoutMs=0&from=github.com');
    expect(res.status).toBe(200);
    expect(res.body.data.code).toBe('482913');
  });
});

// The reply text is found after the commit (ReplyTextBackfill, run by the worker role); until
// then a read finds the same text itself. A server without the worker shows both sides.
describe('reply text after the commit', () => {
  let quiet: TestServer;
  let carol: Box;
  beforeAll(async () => {
    quiet = await startTestServer({
      roles: ['api', 'smtp'],
      env: { SMTP_MX_PORT: '0', SMTP_SUBMISSION_PORT: '0' },
    });
    const d = await quiet.createDomain();
    carol = await quiet.createMailbox(d.token, `carol@${d.name}`);
  });
  afterAll(async () => {
    await quiet?.close();
  });

  it('intake stores codes and links; a read finds the reply text; the backfill stores the same text once', async () => {
    const expected = "Sure, let's meet in room 3105 at 14:30. My extension is 4417 if anything changes.";
    await deliverToMx(
      quiet.runtime.smtpPorts.mx!,
      { from: 'bob@corp.example', to: carol.address },
      fixture('43-colleague-reply.eml', carol.address),
    );
    const found = await waitFor(async () => {
      const res = await quiet.api(carol.token).get(`/api/messages?direction=inbound&limit=5`);
      return res.body.data.items.find((i: { subject: string }) => i.subject === 'Re: Lunch');
    });
    const { db, replyTextBackfill } = quiet.runtime.services;
    const stored = async () =>
      jsonValue(
        (await db.one(sql<{ extracted: unknown }>`select extracted from message where id = ${found.messageId}`))!
          .extracted,
      ) as Record<string, unknown>;
    expect(await stored()).not.toHaveProperty('replyText');
    expect(await stored()).toHaveProperty('codes');
    const before = (await quiet.api(carol.token).get(`/api/messages/${found.messageId}`)).body.data;
    expect(before.extracted.replyText).toBe(expected);

    expect(await replyTextBackfill.fillSome()).toBeGreaterThanOrEqual(1);
    expect((await stored()).replyText).toBe(expected);
    const after = (await quiet.api(carol.token).get(`/api/messages/${found.messageId}`)).body.data;
    expect(after.extracted).toEqual(before.extracted);
    expect(await replyTextBackfill.fillSome()).toBe(0);
  });
});
