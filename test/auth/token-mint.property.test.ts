import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { sql } from '../../src/storage/database.js';
import {
  DOMAIN_TOKEN_SCOPES,
  MAILBOX_TOKEN_SCOPES,
  SCOPES,
  type Scope,
  type TokenKind,
} from '../../src/core/access/scopes.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintToken, type MailboxFixture } from '../support/tenants.js';

// Property: through the real HTTP routes, a child token never exceeds its parent: scopes ⊆
// parent's (never DomainManage), bound to the same mailbox, expiry ≤ parent's. A request the
// rules refuse is a 400, and exactly the requests the rules allow are accepted.

const DAY = 86_400_000;
let server: TestServer;
let mailbox: MailboxFixture;
let domainId: string;

beforeAll(async () => {
  server = await startTestServer();
  const d = await server.createDomain();
  domainId = d.domainId;
  mailbox = { ...(await server.createMailbox(d.token, `prop@${d.name}`)), domainId };
});
afterAll(async () => {
  await server?.close();
});

type ExpiryChoice = 'omitted' | 'null' | 'past' | 'within' | 'equal' | 'beyond' | 'garbage';
const EXPIRY_CHOICES: ExpiryChoice[] = ['omitted', 'null', 'past', 'within', 'equal', 'beyond', 'garbage'];

const parentArb = (kind: TokenKind) =>
  fc.record({
    // The parent needs its governance scope to reach the route at all; the rest is random.
    scopes: fc.subarray([...(kind === 'mailbox' ? MAILBOX_TOKEN_SCOPES : DOMAIN_TOKEN_SCOPES)]),
    lifetimeMs: fc.option(fc.integer({ min: 3_600_000, max: 400 * DAY }), { nil: null }),
  });
const childArb = fc.record({
  scopes: fc.subarray([...SCOPES], { minLength: 0 }),
  expiry: fc.constantFrom(...EXPIRY_CHOICES),
  fraction: fc.double({ min: 0.05, max: 0.95, noNaN: true }),
});

function childExpiry(choice: ExpiryChoice, parentExp: number | null, fraction: number): unknown {
  const now = Date.now();
  const ceiling = parentExp ?? now + 500 * DAY;
  switch (choice) {
    case 'omitted':
      return undefined;
    case 'null':
      return null;
    case 'past':
      return now - 60_000;
    case 'within':
      return Math.floor(now + 60_000 + (ceiling - now - 60_000) * fraction);
    case 'equal':
      return parentExp ?? now + 10 * DAY;
    case 'beyond':
      return parentExp === null ? 'later' : parentExp + 1;
    case 'garbage':
      return 'later';
  }
}

async function check(
  kind: TokenKind,
  parent: { scopes: Scope[]; lifetimeMs: number | null },
  child: { scopes: Scope[]; expiry: ExpiryChoice; fraction: number },
) {
  const governance: Scope = kind === 'mailbox' ? 'TokenManage' : 'DomainManage';
  const parentScopes = [...new Set<Scope>([...parent.scopes, governance])];
  const parentExp = parent.lifetimeMs === null ? null : Date.now() + parent.lifetimeMs;
  const p = await mintToken(server, {
    kind,
    domainId,
    mailboxId: mailbox.mailboxId,
    scopes: parentScopes,
    expiresAt: parentExp === null ? null : new Date(parentExp),
  });
  const path =
    kind === 'mailbox' ? '/api/mailbox/access-tokens' : `/api/domain/mailboxes/${mailbox.mailboxId}/access-tokens`;
  const expiresAtTs = childExpiry(child.expiry, parentExp, child.fraction);
  const body = { tokenName: 'prop', scopes: child.scopes, ...(expiresAtTs === undefined ? {} : { expiresAtTs }) };
  const res = await server.api(p.token).post(path, body);

  // The rules, stated independently of the implementation.
  const scopesOk =
    child.scopes.length > 0 && child.scopes.every((s) => parentScopes.includes(s) && s !== 'DomainManage');
  const expiryOk = typeof expiresAtTs !== 'string' && child.expiry !== 'past' && child.expiry !== 'beyond';
  expect(res.status, JSON.stringify({ parentScopes, parentExp, body, res: res.body })).toBe(
    scopesOk && expiryOk ? 201 : 400,
  );
  if (res.status !== 201) return;

  const row = await server.runtime.services.db.one(sql<{
    kind: string;
    mailbox_id: string;
    scopes: Scope[];
    expires_at: string | null;
    parent_token_id: string;
  }>`
    select kind, mailbox_id, scopes, expires_at, parent_token_id from access_token where id = ${res.body.data.tokenId}`);
  expect(row!.kind).toBe('mailbox');
  expect(row!.mailbox_id).toBe(mailbox.mailboxId);
  expect(row!.parent_token_id).toBe(p.tokenId);
  expect(row!.scopes.every((s) => parentScopes.includes(s) && s !== 'DomainManage')).toBe(true);
  // A child always expires, and never after its parent.
  expect(row!.expires_at).not.toBeNull();
  if (parentExp !== null) expect(new Date(row!.expires_at!).getTime()).toBeLessThanOrEqual(parentExp);
}

describe('token minting never escalates (property, through HTTP)', () => {
  it.each(['mailbox', 'domain'] as const)('via the %s governance routes', async (kind) => {
    await fc.assert(
      fc.asyncProperty(parentArb(kind), childArb, (parent, child) => check(kind, parent, child)),
      { numRuns: 40 },
    );
  });
});
