import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/storage/database.js';
import { TokenAuthenticator } from '../../src/core/access/token-authenticator.js';
import { TokenStore, type PrincipalRow } from '../../src/core/access/token.store.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintToken } from '../support/tenants.js';

// The auth cache (AUTH_CACHE_TTL) never outlives a disable in this process: a lookup that read the
// token before the disable committed answers its own request, but is neither cached nor shared
// with a request that arrives after the disable (token-authenticator.ts, `generation`).

/** The real store, whose lookup by hash reads the row at once and answers only when released. */
class HeldTokenStore extends TokenStore {
  private gate: Promise<void> | null = null;
  release: () => void = () => undefined;
  lookups = 0;
  /** Lookups whose row has been read: a test waits for this, not `lookups`, before it disables. */
  reads = 0;

  hold(): void {
    this.gate = new Promise((resolve) => (this.release = resolve));
  }

  override async principalByHash(hash: string): Promise<PrincipalRow | undefined> {
    this.lookups++;
    const row = await super.principalByHash(hash);
    this.reads++;
    await this.gate;
    return row;
  }
}

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

async function setup() {
  const { db, clock, usage, tokenAuth } = server.runtime.services;
  const domain = await server.createDomain();
  const mbx = await server.createMailbox(domain.token, `cache@${domain.name}`);
  const minted = await mintToken(server, {
    name: 'cached',
    kind: 'mailbox',
    domainId: domain.domainId,
    mailboxId: mbx.mailboxId,
  });
  const store = new HeldTokenStore(db);
  // A long TTL: anything cached would still be answered when the test asks again.
  const auth = new TokenAuthenticator(store, clock, usage, tokenAuth.throttle, 60_000);
  const disable = async () => {
    await db.rows(sql`update access_token set disabled_at = now() where id = ${minted.tokenId}`);
    auth.forgetCached(minted.tokenId);
  };
  return { auth, store, token: minted.token, tokenId: minted.tokenId, disable };
}

describe('auth cache across a disable', () => {
  it('serves a valid token from the cache until it is disabled here', async () => {
    const { auth, store, token, disable } = await setup();
    expect((await auth.authenticate(token, null)).tokenId).toBeTruthy();
    await auth.authenticate(token, null);
    expect(store.lookups).toBe(1); // the second answer came from the cache
    await disable();
    await expect(auth.authenticate(token, null)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(store.lookups).toBe(2);
  });

  it('does not cache a lookup that read the token before the disable', async () => {
    const { auth, store, token, tokenId, disable } = await setup();
    store.hold();
    const before = auth.authenticate(token, null); // reads the enabled row, answers when released
    await expect.poll(() => store.reads).toBe(1); // read while still enabled
    await disable();
    store.release();
    expect((await before).tokenId).toBe(tokenId); // began before the disable: its own answer stands
    await expect(auth.authenticate(token, null)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('does not let a request after the disable join a lookup that began before it', async () => {
    const { auth, store, token, tokenId, disable } = await setup();
    store.hold();
    const before = auth.authenticate(token, null);
    await expect.poll(() => store.reads).toBe(1); // read while still enabled
    await disable();
    const after = auth.authenticate(token, null).then(
      () => 'accepted',
      (err: { code?: string }) => err.code,
    );
    store.release();
    expect((await before).tokenId).toBe(tokenId);
    expect(await after).toBe('UNAUTHENTICATED');
    expect(store.lookups).toBe(2);
  });
});
