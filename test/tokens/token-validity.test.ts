import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/storage/database.js';
import { isRevealable, revealableSql, tokenRefusal, validTokenSql } from '../../src/core/access/token.store.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintToken } from '../support/tenants.js';

// Token validity and revealability are each one rule with a row form (TypeScript) and a bulk form
// (SQL). Both forms run here over the same rows in every state, so they cannot drift apart.

let server: TestServer;
const HOUR = 3_600_000;
const ids: Record<string, string> = {};

beforeAll(async () => {
  server = await startTestServer();
  const db = server.runtime.services.db;
  const now = server.runtime.services.clock.now().getTime();
  const live = await server.createDomain();
  const off = await server.createDomain();
  const mbx = await server.createMailbox(live.token, `on@${live.name}`);
  const disabledMbx = await server.createMailbox(live.token, `off@${live.name}`);
  const offMbx = await server.createMailbox(off.token, `any@${off.name}`);
  const mint = async (name: string, o: Parameters<typeof mintToken>[1]) => {
    ids[name] = (await mintToken(server, { name, ...o })).tokenId;
  };
  const m = { kind: 'mailbox' as const, domainId: live.domainId, mailboxId: mbx.mailboxId };
  await mint('valid mailbox token', m);
  await mint('valid domain token', { kind: 'domain', domainId: live.domainId });
  await mint('never expires', { ...m, expiresAt: null });
  await mint('disabled', { ...m, disabled: true });
  await mint('expired', { ...m, expiresAt: new Date(now - 1) });
  await mint('mailbox disabled', { kind: 'mailbox', domainId: live.domainId, mailboxId: disabledMbx.mailboxId });
  await mint('domain disabled (mailbox token)', {
    kind: 'mailbox',
    domainId: off.domainId,
    mailboxId: offMbx.mailboxId,
  });
  await mint('domain disabled (domain token)', { kind: 'domain', domainId: off.domainId });
  await mint('reveal window closed', m);
  await mint('ciphertext erased', m);
  await db.rows(sql`update mailbox set disabled_at = now() where id = ${disabledMbx.mailboxId}`);
  await db.rows(sql`update domain set disabled_at = now() where id = ${off.domainId}`);
  await db.rows(
    sql`update access_token set reveal_until = ${new Date(now - HOUR)} where id = ${ids['reveal window closed']!}`,
  );
  await db.rows(sql`update access_token set plaintext_cipher = null where id = ${ids['ciphertext erased']!}`);
});
afterAll(async () => {
  await server?.close();
});

async function rows(now: Date) {
  return server.runtime.services.db.rows(sql<{
    id: string;
    name: string;
    disabled_at: string | null;
    expires_at: string | null;
    reveal_until: string | null;
    plaintext_cipher: string | null;
    domain_disabled: boolean;
    mailbox_disabled: boolean;
    valid: boolean;
    revealable: boolean;
  }>`select t.id, t.name, t.disabled_at, t.expires_at, t.reveal_until, t.plaintext_cipher,
      d.disabled_at is not null as domain_disabled, coalesce(tm.disabled_at is not null, false) as mailbox_disabled,
      ${validTokenSql(now)} as valid, coalesce(${revealableSql(now)}, false) as revealable
    from access_token t join domain d on d.id = t.domain_id left join mailbox tm on tm.id = t.mailbox_id
    where t.id = any(${Object.values(ids)}::text[])`);
}

describe('token validity: one rule, row and SQL forms agree', () => {
  it('agrees on every state, now and two days later', async () => {
    for (const now of [new Date(), new Date(Date.now() + 48 * HOUR)]) {
      for (const r of await rows(now)) {
        const refusal = tokenRefusal(
          {
            disabledAt: r.disabled_at,
            expiresAt: r.expires_at,
            domainDisabled: r.domain_disabled,
            mailboxDisabled: r.mailbox_disabled,
          },
          now,
        );
        expect({ name: r.name, valid: r.valid }).toEqual({ name: r.name, valid: refusal === null });
        const revealable = isRevealable(r, now);
        expect({ name: r.name, revealable: r.revealable }).toEqual({ name: r.name, revealable });
      }
    }
  });

  it('refuses exactly the states the spec names', async () => {
    const now = new Date();
    const verdict = Object.fromEntries((await rows(now)).map((r) => [r.name, [r.valid, r.revealable]]));
    expect(verdict).toEqual({
      'valid mailbox token': [true, true],
      'valid domain token': [true, true],
      'never expires': [true, true],
      disabled: [false, false],
      expired: [false, false],
      'mailbox disabled': [false, true],
      'domain disabled (mailbox token)': [false, true],
      'domain disabled (domain token)': [false, true],
      'reveal window closed': [true, false],
      'ciphertext erased': [true, false],
    });
  });

  it('sweeps the ciphertext of exactly the tokens that can no longer be revealed', async () => {
    await server.runtime.services.tokens.sweepExpiredCiphertext();
    const left = (await rows(new Date())).filter((r) => r.plaintext_cipher !== null).map((r) => r.name);
    expect(left.sort()).toEqual(
      [
        'valid mailbox token',
        'valid domain token',
        'never expires',
        'mailbox disabled',
        'domain disabled (mailbox token)',
        'domain disabled (domain token)',
      ].sort(),
    );
  });
});
