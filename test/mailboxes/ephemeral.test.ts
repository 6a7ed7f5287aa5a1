import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { ManualClock, mintToken } from '../support/tenants.js';
import { rowsOf, sendBody, waitFor } from '../delivery/helpers.js';
import { rfc5322 } from '../smtp/smtp-wire.js';
import { mxPort, startSmtpTestServer } from '../smtp/world.js';
import { deliverToMx, mxRefusal } from '../smtp/mx-peer.js';
import { TokenAuthenticator } from '../../src/core/access/token-authenticator.js';
import { TokenStore } from '../../src/core/access/token.store.js';
import { MailboxExpirySweeper } from '../../src/core/flows/housekeeping/mailbox-expiry.js';

// Ephemeral mailboxes (docs/workflow.md): `ttlSeconds` at creation; at the end mail and tokens are
// refused at once, and the sweeper removes the mailbox, its messages and blobs, and its storage.
// The service's clock is moved by hand; the sweeper is run directly rather than waited for.

const clock = new ManualClock();
let server: TestServer;
let x: { domainId: string; name: string; token: string };
const q = rowsOf(() => server);
const TTL = 120;

beforeAll(async () => {
  server = await startSmtpTestServer({ roles: ['api', 'smtp', 'worker'], clock });
  x = await server.createDomain();
});
afterAll(async () => {
  await server?.close();
});

async function ephemeral(localPart: string, ttlSeconds = TTL) {
  const res = await server.api(x.token).post('/api/mailboxes', { localPart, ttlSeconds });
  expect(res.status).toBe(201);
  return res.body.data as {
    mailbox: { mailboxId: string; address: string; expiresAtTs: number };
    initialAccessToken: string;
    initialAccessTokenExpiresAtTs: number;
    expiresAtTs: number;
  };
}

const usedBytes = async () => (await server.api(x.token).get('/api/domain/storage')).body.data.usedBytes as number;
const mx = (to: string, subject: string) =>
  deliverToMx(
    mxPort(server),
    { from: 'peer@sender.example', to },
    rfc5322({ from: 'peer@sender.example', to, subject }),
  );

describe('ephemeral mailboxes', () => {
  it('answers expiresAtTs on both creation routes and refuses a ttlSeconds out of range', async () => {
    const before = clock.now().getTime();
    const created = await ephemeral('temp-a');
    expect(created.expiresAtTs).toBe(before + TTL * 1000);
    expect(created.mailbox.expiresAtTs).toBe(created.expiresAtTs);
    expect(created.initialAccessTokenExpiresAtTs).toBeLessThanOrEqual(created.expiresAtTs);
    const viaDomain = await server.api(x.token).post('/api/domain/mailboxes', { localPart: 'temp-b', ttlSeconds: 600 });
    expect(viaDomain.status).toBe(201);
    expect(viaDomain.body.data.expiresAtTs).toBe(before + 600_000);
    const plain = await server.api(x.token).post('/api/mailboxes', { localPart: 'lasting' });
    expect(plain.body.data.expiresAtTs).toBeNull();
    for (const bad of [0, 59, 1.5, 'soon', 366 * 24 * 3600]) {
      const res = await server.api(x.token).post('/api/mailboxes', { localPart: 'bad', ttlSeconds: bad });
      expect(res.status).toBe(400);
      expect(res.body.errMsg).toMatch(/^ttlSeconds: /);
    }
  });

  it('takes mail and its token until the end, then refuses both at once, then is swept with its blobs and storage', async () => {
    const created = await ephemeral('temp-c');
    const address = created.mailbox.address;
    const mailboxId = created.mailbox.mailboxId;
    const token = created.initialAccessToken;
    // A token that would never expire by itself: only the mailbox's end ends it.
    const lasting = (await mintToken(server, { kind: 'mailbox', domainId: x.domainId, mailboxId, expiresAt: null }))
      .token;
    const sender = await server.createMailbox(x.token, `sender-c@${x.name}`);
    const baseline = await usedBytes();

    // Before the end: mail arrives (port 25) and the token reads it.
    expect((await mx(address, 'Before the end')).response).toMatch(/^250 /);
    const listed = await waitFor(async () => {
      const res = await server.api(token).get('/api/messages');
      return res.status === 200 && res.body.data.items.length === 1 ? res : undefined;
    });
    expect(listed.body.data.items[0].subject).toBe('Before the end');
    expect(await usedBytes()).toBeGreaterThan(baseline);
    const blobKeys = (await q`select raw_blob_key from message where mailbox_id = ${mailboxId}`).map(
      (r) => r.raw_blob_key as string,
    );
    expect(blobKeys.length).toBe(1);

    // A token verified just before the end, by an authenticator that caches for a minute.
    const { db, usage, tokenAuth, blobs } = server.runtime.services;
    const cachingAuth = new TokenAuthenticator(new TokenStore(db), clock, usage, tokenAuth.throttle, 60_000);
    clock.advance(TTL * 1000 - 1);
    expect((await cachingAuth.authenticate(lasting, null)).mailboxId).toBe(mailboxId);
    expect((await server.api(lasting).get('/api/messages')).status).toBe(200);
    clock.advance(1);

    // At the end: 550 5.1.1 on RCPT, 401 with its token (also the cached one), and local delivery
    // from another hosted mailbox fails as to an unknown address.
    expect(await mxRefusal(mxPort(server), { from: 'peer@sender.example', to: address }, 'x')).toMatch(/^550 5\.1\.1 /);
    expect((await server.api(token).get('/api/messages')).status).toBe(401);
    expect((await server.api(lasting).get('/api/messages')).status).toBe(401);
    await expect(cachingAuth.authenticate(lasting, null)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    const sent = await server.api(sender.token).post('/api/messages/send', sendBody(address, { subject: 'Too late' }));
    expect(sent.status).toBe(202);
    const failed = await waitFor(async () => {
      const [r] =
        await q`select status, remote_reply from message_recipient where message_id = ${sent.body.data.messageId}`;
      return r?.status === 'failed' ? r : undefined;
    });
    expect(failed.remote_reply).toMatch(/^550 5\.1\.1 /);

    // The sweep removes the mailbox and everything it owns; the domain's storage drops by its share.
    const [{ storage_used_bytes: own }] = await q`select storage_used_bytes from mailbox where id = ${mailboxId}`;
    expect(Number(own)).toBeGreaterThan(0);
    const domainBefore = await usedBytes();
    await new MailboxExpirySweeper(db, blobs, clock).sweep();
    expect(await q`select id from mailbox where id = ${mailboxId}`).toEqual([]);
    expect(await q`select id from message where mailbox_id = ${mailboxId}`).toEqual([]);
    expect(await q`select id from access_token where mailbox_id = ${mailboxId}`).toEqual([]);
    await expect(blobs.get(blobKeys[0]!)).rejects.toThrow();
    expect(await usedBytes()).toBe(domainBefore - Number(own));
    // The sender's mailbox and its mail are untouched.
    expect((await server.api(sender.token).get('/api/messages?direction=outbound')).status).toBe(200);
  });

  it('leaves a mailbox before its end, and one without a ttl, to the sweeper alone', async () => {
    const early = await ephemeral('temp-d', 3600);
    const { db, blobs } = server.runtime.services;
    await new MailboxExpirySweeper(db, blobs, clock).sweep();
    expect(await q`select id from mailbox where id = ${early.mailbox.mailboxId}`).toHaveLength(1);
    expect(await q`select id from mailbox where address = ${`lasting@${x.name}`}`).toHaveLength(1);
  });
});
