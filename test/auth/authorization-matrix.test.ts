import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../../src/channels/http/routes/index.js';
import type { RouteSpec } from '../../src/channels/http/route.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { createMatrixWorld, routeFixtures, routeKey, send, type MatrixWorld } from '../support/route-fixtures.js';
import { ATTACK_CASES, buildCaller, matrixRows, type Row } from '../support/authz-matrix.js';

// The authorization matrix, generated from the route table: every route × every kind of caller.
// Expectations are derived from what the route declares (auth, tokenKinds, scope), so a route
// whose declaration and behaviour disagree shows up here as a mismatch. The rows live in
// test/support/authz-matrix.ts; the reliability suite runs the same rows over MCP and Socket.IO.

/** The rows for one route, each with its expected status. */
const rowsFor = (r: RouteSpec): Row[] => matrixRows(r, routeFixtures[routeKey(r)]!);

let server: TestServer;
let world: MatrixWorld;
const mismatches: string[] = [];
let checked = 0;

beforeAll(async () => {
  // Every row replies to the same seeded sender: the loop guard's reply budget is not under test here.
  server = await startTestServer({
    env: {
      SEND_RATE_LIMIT_PER_MINUTE: '100000',
      AUTO_REPLY_LIMIT_PER_HOUR: '1000000',
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      // Every row registers webhooks in the same domain: the webhook caps are not under test here.
      WEBHOOK_MAX_PER_DOMAIN: '10000',
      WEBHOOK_MAX_PER_MAILBOX: '1000',
    },
  });
  world = await createMatrixWorld(server);
});
afterAll(async () => {
  const unbuilt = Object.keys(routeFixtures).filter((k) => !allRoutes.some((r) => routeKey(r) === k));
  console.log(
    `authorization matrix: ${allRoutes.length} routes, ${checked} rows checked, ${mismatches.length} mismatches` +
      (unbuilt.length ? `; fixtures waiting for routes not yet in allRoutes: ${unbuilt.length}` : ''),
  );
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
        const who = await row.caller(world);
        // Built after the caller exists: self-governance sees only tokens created at or after it.
        const req = await fixture.build(world, buildCaller(row, who, r));
        const res = await send(server, r.method, req, who.authorization);
        const want = row.expected === 'success' ? r.status : row.expected;
        checked++;
        const envelopeOk =
          res.body?.code === res.status && (res.status < 400 ? res.body.errMsg === null : res.body.data === null);
        if (res.status !== want || !envelopeOk) {
          wrong.push(`${routeKey(r)} [${row.name}]: expected ${want}, got ${res.status} ${res.body?.errMsg ?? ''}`);
        }
      }
      mismatches.push(...wrong);
      expect(wrong).toEqual([]);
    });
  }
});

describe('authorization matrix: attacks beyond the declarations', () => {
  for (const c of ATTACK_CASES) {
    it(c.name, async () => {
      expect(await c.attempt(world)).toEqual(c.expected);
    });
  }
});
