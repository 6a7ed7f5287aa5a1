import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf } from '../delivery/helpers.js';
import { writeQueuedSubmissions } from '../support/intake-queue.js';
import { rfc5322, type SmtpWire } from './smtp-wire.js';
import { loggedInWire, startSmtpTestServer } from './world.js';
import { SenderReadCache } from '../../src/core/flows/submission/sender-read-cache.js';
import type { SenderAtMailFrom } from '../../src/core/flows/submission/sender-identity.store.js';

// A session's MAIL FROM read (sender identity, quota, policy layers) is reused by its next MAIL
// FROM of the same address for AUTH_CACHE_TTL (docs/api.md, "Queued submission on 587"); a
// refusal at end of DATA forgets it, and what end of DATA decides is read there afresh.

const read = (over: Partial<SenderAtMailFrom> = {}): SenderAtMailFrom => ({
  identity: true,
  full: false,
  limited: false,
  layers: {} as SenderAtMailFrom['layers'],
  ...over,
});

describe('SenderReadCache', () => {
  it('keeps a read that let MAIL FROM pass, per session and address, until forgotten', () => {
    const cache = new SenderReadCache<object>(60_000);
    const [a, b] = [{}, {}];
    const r = read();
    cache.remember(a, 'x@d.test', r, performance.now());
    expect(cache.get(a, 'x@d.test')).toBe(r);
    expect(cache.get(a, 'y@d.test')).toBeUndefined(); // another address is read afresh
    expect(cache.get(b, 'x@d.test')).toBeUndefined(); // so is another session
    cache.forget(a);
    expect(cache.get(a, 'x@d.test')).toBeUndefined();
  });

  it('keeps no refusal (no identity, a full mailbox), nothing with a TTL of 0, nothing past its TTL', async () => {
    const cache = new SenderReadCache<object>(60_000);
    const s = {};
    cache.remember(s, 'x@d.test', read({ identity: false }), performance.now());
    expect(cache.get(s, 'x@d.test')).toBeUndefined();
    cache.remember(s, 'x@d.test', read({ full: true }), performance.now());
    expect(cache.get(s, 'x@d.test')).toBeUndefined();
    const off = new SenderReadCache<object>(0);
    off.remember(s, 'x@d.test', read(), performance.now());
    expect(off.get(s, 'x@d.test')).toBeUndefined();
    const short = new SenderReadCache<object>(30);
    short.remember(s, 'x@d.test', read(), performance.now());
    expect(short.get(s, 'x@d.test')).toBeDefined();
    await new Promise((r) => setTimeout(r, 50));
    expect(short.get(s, 'x@d.test')).toBeUndefined();
  });

  it('ages a read from when its query was sent, not from when it was answered', () => {
    const cache = new SenderReadCache<object>(1_000);
    const s = {};
    cache.remember(s, 'x@d.test', read(), performance.now() - 1_001);
    expect(cache.get(s, 'x@d.test')).toBeUndefined();
  });
});

describe('the MAIL FROM read cache over SMTP', () => {
  let server: TestServer;
  let x: { domainId: string; name: string; token: string };
  const q = rowsOf(() => server);
  let boxes = 0;
  const newBox = () => server.createMailbox(x.token, `cached${++boxes}@${x.name}`);
  beforeAll(async () => {
    // A TTL no test outlasts: "within the TTL" holds however slow the machine.
    server = await startSmtpTestServer({ env: { AUTH_CACHE_TTL: '10m' } });
    x = await server.createDomain(undefined, { sendRateLimitPerMinute: 1000 });
  });
  afterAll(async () => {
    await server?.close();
  });

  const message = async (wire: SmtpWire, from: string, to: string, subject: string) => {
    await wire.cmd(`MAIL FROM:<${from}>`, 250);
    const rcpt = await wire.cmd(`RCPT TO:<${to}>`);
    if (rcpt.code !== 250) return `RCPT TO: ${rcpt.last}`;
    await wire.cmd('DATA', 354);
    return `DATA: ${(await wire.cmd(rfc5322({ from, to, subject }) + '\r\n.')).last}`;
  };

  it('a rule added since the read still refuses at end of DATA, and the refusal makes the next MAIL FROM read afresh', async () => {
    const m = await newBox();
    const wire = await loggedInWire(server, m);
    expect(await message(wire, m.address, 'a@ext.test', 'first')).toMatch(/^DATA: 250 /);
    const res = await server
      .api(x.token)
      .put(`/api/domain/mailboxes/${m.mailboxId}/policy`, { blockedRecipients: ['@ext.test'] });
    expect(res.status).toBe(200);
    // RCPT TO judges by the read this session's first MAIL FROM made; end of DATA reads the rules.
    expect(await message(wire, m.address, 'b@ext.test', 'second')).toMatch(/^DATA: 550 5\.7\.1 /);
    // That refusal forgot the read: this MAIL FROM reads the new rule, RCPT TO refuses.
    expect(await message(wire, m.address, 'c@ext.test', 'third')).toMatch(/^RCPT TO: 550 5\.7\.1 /);
    await wire.cmd('QUIT', 221);
    const subjects = await q`select subject from message where mailbox_id = ${m.mailboxId}`;
    expect(subjects.map((r) => r.subject)).toEqual(['first']);
  });

  it('a quota set within the TTL: the message answered 250 is written (counted, exempt), the next session gets 552', async () => {
    const m = await newBox();
    const wire = await loggedInWire(server, m);
    wire.awaitQueued = false;
    expect(await message(wire, m.address, 'a@remote.example', 'before')).toMatch(/^DATA: 250 /);
    await writeQueuedSubmissions(server.runtime);
    await q`update mailbox set storage_quota_bytes = 1 where id = ${m.mailboxId}`;
    // The session's read said "no quota": its 250 reserved nothing, and the write behind it must not
    // be refused by the quota set since (no refusal can reach the client after a 250).
    expect(await message(wire, m.address, 'b@remote.example', 'after')).toMatch(/^DATA: 250 /);
    await writeQueuedSubmissions(server.runtime);
    await wire.cmd('QUIT', 221);
    const rows =
      await q`select subject, stored_bytes from message where mailbox_id = ${m.mailboxId} order by created_at`;
    expect(rows.map((r) => r.subject)).toEqual(['before', 'after']);
    const [{ storage_used_bytes: usedBytes }] =
      await q`select storage_used_bytes from mailbox where id = ${m.mailboxId}`;
    expect(Number(usedBytes)).toBe(rows.reduce((n, r) => n + Number(r.stored_bytes), 0)); // counted all the same
    const fresh = await loggedInWire(server, m);
    expect((await fresh.cmd(`MAIL FROM:<${m.address}>`)).last).toMatch(/^552 5\.2\.2 /);
    await fresh.cmd('QUIT', 221);
  });
});

describe('the MAIL FROM read cache past its TTL', () => {
  let server: TestServer;
  const q = rowsOf(() => server);
  beforeAll(async () => {
    server = await startSmtpTestServer({ env: { AUTH_CACHE_TTL: '100ms' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a sender identity turned off is refused at the next MAIL FROM after AUTH_CACHE_TTL', async () => {
    const x = await server.createDomain(undefined, { sendRateLimitPerMinute: 1000 });
    const m = await server.createMailbox(x.token, `ttl@${x.name}`);
    const wire = await loggedInWire(server, m);
    await wire.cmd(`MAIL FROM:<${m.address}>`, 250);
    await wire.cmd('RSET', 250);
    await q`update sender_identity set is_active = false where mailbox_id = ${m.mailboxId}`;
    await new Promise((r) => setTimeout(r, 150));
    expect((await wire.cmd(`MAIL FROM:<${m.address}>`)).last).toMatch(/^5\d\d /);
    await wire.cmd('QUIT', 221).catch(() => undefined);
  });
});
