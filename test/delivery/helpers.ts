import type { TestServer } from '../support/harness.js';
import type { Scope } from '../../src/core/access/scopes.js';
import { sql } from '../../src/storage/database.js';

/** A domain with two mailboxes, each with its bootstrap token. */
export async function twoMailboxes(server: TestServer, opts: { sendRateLimitPerMinute?: number } = {}) {
  const domain = await server.createDomain(undefined, opts);
  const a = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
  const b = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
  return { domain, a, b };
}

/** A mailbox token with exactly `scopes`, minted directly (the token routes are not under test here). */
export async function mailboxTokenWith(server: TestServer, mailboxId: string, scopes: Scope[]): Promise<string> {
  const services = server.runtime.services;
  const row = await services.db.one(sql<{ domain_id: string }>`select domain_id from mailbox where id = ${mailboxId}`);
  const minted = await services.db.tx((trx) =>
    services.tokenMinter.mint(trx, {
      kind: 'mailbox',
      domainId: row!.domain_id,
      mailboxId,
      name: 'limited',
      scopes,
      expiresAt: new Date(Date.now() + 86_400_000),
      createdSource: 'self',
      parentTokenId: null,
    }),
  );
  return minted.accessToken;
}

/**
 * A tagged template over the test server's database (rows straight from storage, for assertions
 * the HTTP read side does not cover): `const q = rowsOf(() => server); await q\`select …\``.
 */
export const rowsOf =
  (server: () => TestServer) =>
  (text: TemplateStringsArray, ...values: unknown[]): Promise<any[]> =>
    server().runtime.services.db.rows(sql<any>(text, ...values));

export async function waitFor<T>(
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const sendBody = (to: string | string[], extra: Record<string, unknown> = {}) => ({
  toAddress: to,
  subject: 'Hello',
  bodyText: 'Hi there',
  ...extra,
});
