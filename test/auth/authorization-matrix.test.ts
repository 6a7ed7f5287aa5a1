import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../../src/channels/http/routes/index.js';
import type { RouteSpec } from '../../src/channels/http/route.js';
import { mintTokenPlaintext } from '../../src/core/tokens/token-format.js';
import { DOMAIN_TOKEN_SCOPES, MAILBOX_TOKEN_SCOPES, type Scope, type TokenKind } from '../../src/core/tokens/scopes.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintToken } from '../support/tenants.js';
import { createMatrixWorld, routeFixtures, routeKey, send, type MatrixWorld } from '../support/route-fixtures.js';

// The authorization matrix, generated from the route table: every route × every kind of caller.
// Expectations are derived from what the route declares (auth, tokenKinds, scope), so a route
// whose declaration and behaviour disagree shows up here as a mismatch.

type Expected = number | 'success';
interface Caller { kind: TokenKind; scopes: readonly Scope[]; authorization: string }
interface Row { name: string; caller(w: MatrixWorld, r: RouteSpec): Promise<Caller | { authorization?: string }>; expected: Expected }

const ALL: Record<TokenKind, readonly Scope[]> = { mailbox: MAILBOX_TOKEN_SCOPES, domain: DOMAIN_TOKEN_SCOPES };
const bearer = (token: string) => `Bearer ${token}`;

async function caller(w: MatrixWorld, kind: TokenKind, o: { scopes?: readonly Scope[]; foreign?: boolean; expired?: boolean; disabled?: boolean } = {}): Promise<Caller> {
  const scopes = o.scopes ?? ALL[kind];
  const domain = o.foreign ? w.t.Y : w.t.X;
  const now = w.server.runtime.services.clock.now().getTime();
  const { token } = await mintToken(w.server, {
    kind, domainId: domain.domainId, mailboxId: kind === 'mailbox' ? w.t.A1.mailboxId : null, scopes,
    ...(o.expired ? { expiresAt: new Date(now - 60_000) } : {}), disabled: o.disabled ?? false,
  });
  return { kind, scopes, authorization: bearer(token) };
}

/** The rows for one route, each with its expected status. */
function rowsFor(r: RouteSpec): Row[] {
  const fixture = routeFixtures[routeKey(r)]!;
  if (r.auth === 'none') {
    // Credentials are the body; any Authorization header must simply be ignored.
    return [
      { name: 'no token', caller: async () => ({}), expected: 'success' },
      { name: 'malformed token', caller: async () => ({ authorization: 'Bearer nope' }), expected: 'success' },
      { name: 'mailbox token', caller: (w) => caller(w, 'mailbox'), expected: 'success' },
      { name: 'domain token', caller: (w) => caller(w, 'domain'), expected: 'success' },
    ];
  }
  const own = r.tokenKinds[0]!;
  const kindStatus = (k: TokenKind): Expected => (r.tokenKinds.includes(k) ? 'success' : 403);
  const rows: Row[] = [
    { name: 'no token', caller: async () => ({}), expected: 401 },
    { name: 'malformed token', caller: async () => ({ authorization: 'Bearer not-a-token' }), expected: 401 },
    { name: 'unknown well-formed token', caller: async () => ({ authorization: bearer(mintTokenPlaintext(own)) }), expected: 401 },
    { name: `expired ${own} token`, caller: (w) => caller(w, own, { expired: true }), expected: 401 },
    { name: `disabled ${own} token`, caller: (w) => caller(w, own, { disabled: true }), expected: 401 },
    { name: 'mailbox token', caller: (w) => caller(w, 'mailbox'), expected: kindStatus('mailbox') },
    { name: 'domain token', caller: (w) => caller(w, 'domain'), expected: kindStatus('domain') },
    {
      name: 'domain token of another domain', caller: (w) => caller(w, 'domain', { foreign: true }),
      expected: r.tokenKinds.includes('domain') ? fixture.foreignDomain : 403,
    },
  ];
  // Removing the declared scope is a 403; removing any other scope must not matter.
  for (const kind of r.tokenKinds) {
    for (const missing of ALL[kind]) {
      rows.push({
        name: `${kind} token without ${missing}`,
        caller: (w) => caller(w, kind, { scopes: ALL[kind].filter((s) => s !== missing) }),
        expected: missing === r.scope ? 403 : 'success',
      });
    }
  }
  return rows;
}

let server: TestServer;
let world: MatrixWorld;
const mismatches: string[] = [];
let checked = 0;

beforeAll(async () => {
  server = await startTestServer({ env: { SEND_RATE_LIMIT_PER_MINUTE: '100000' } });
  world = await createMatrixWorld(server);
});
afterAll(async () => {
  const unbuilt = Object.keys(routeFixtures).filter((k) => !allRoutes.some((r) => routeKey(r) === k));
  console.log(`authorization matrix: ${allRoutes.length} routes, ${checked} rows checked, ${mismatches.length} mismatches`
    + (unbuilt.length ? `; fixtures waiting for routes not yet in allRoutes: ${unbuilt.length}` : ''));
  await server?.close();
});

describe('authorization matrix', () => {
  it('has a fixture for every route in allRoutes', () => {
    expect(allRoutes.map(routeKey).filter((k) => !routeFixtures[k])).toEqual([]);
  });

  for (const r of allRoutes) {
    it.runIf(routeFixtures[routeKey(r)] !== undefined)(routeKey(r), async () => {
      const fixture = routeFixtures[routeKey(r)]!;
      const wrong: string[] = [];
      for (const row of rowsFor(r)) {
        const who = await row.caller(world, r);
        // Built after the caller exists: self-governance sees only tokens created at or after it.
        const fallback = { kind: r.tokenKinds[0] ?? 'mailbox', scopes: ALL[r.tokenKinds[0] ?? 'mailbox'] };
        const req = await fixture.build(world, 'kind' in who ? who : fallback);
        const res = await send(server, r.method, req, who.authorization);
        const want = row.expected === 'success' ? r.status : row.expected;
        checked++;
        const envelopeOk = res.body?.code === res.status && (res.status < 400 ? res.body.errMsg === null : res.body.data === null);
        if (res.status !== want || !envelopeOk) {
          wrong.push(`${routeKey(r)} [${row.name}]: expected ${want}, got ${res.status} ${res.body?.errMsg ?? ''}`);
        }
      }
      mismatches.push(...wrong);
      expect(wrong).toEqual([]);
    });
  }
});
