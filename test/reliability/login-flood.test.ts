import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { setMailboxPassword } from '../support/tenants.js';
import { recordFigure, zeroFigure } from './support/figures.js';

// Password logins cannot take the thread pool, and an attack on a mailbox's password
// never refuses its owner elsewhere (docs/api.md, "Authentication throttling"). In process, so the
// hash gate's peak is read directly. Defaults: PASSWORD_HASH_CONCURRENCY 2, per address 1.

const SUITE = 'password login flood';
const LOGIN = '/api/mailbox/auth/login/password';
const PASSWORD = 'correct horse battery staple';
const FLOOD = 400;
let server: TestServer;
let victim: { address: string; token: string };

beforeAll(async () => {
  server = await startTestServer({ env: { LOGIN_ACCOUNT_SLOWDOWN: '200ms' } });
  const d = await server.createDomain();
  const m = await server.createMailbox(d.token, `victim@${d.name}`);
  await setMailboxPassword(server, m.mailboxId, PASSWORD);
  victim = { address: m.address, token: m.token };
});
afterAll(async () => {
  await server?.close();
});

/** One POST of JSON from `localAddress` (fetch cannot choose its source address). */
function post(localAddress: string, agent: http.Agent, body: unknown): Promise<{ status: number; ms: number }> {
  const data = Buffer.from(JSON.stringify(body));
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.url}${LOGIN}`,
      {
        method: 'POST',
        agent,
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': String(data.length) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

async function uploadMs(): Promise<number> {
  const form = new FormData();
  form.set('file', new Blob([Buffer.alloc(4 * 1024 * 1024, 7)], { type: 'application/octet-stream' }), 'x.bin');
  const t0 = performance.now();
  const res = await server.api(victim.token).raw('/api/messages/attachments', { method: 'POST', body: form });
  if (res.status !== 201) throw new Error(`upload ${res.status}`);
  return performance.now() - t0;
}

describe('password login flood', () => {
  it(`${FLOOD} concurrent logins from one address: hashes in flight stay within the cap, uploads keep moving`, async () => {
    const baseline = await uploadMs();
    const agent = new http.Agent({ keepAlive: false, maxSockets: FLOOD });
    server.runtime.services.hashes.peak = 0;
    const flood = Promise.all(
      Array.from({ length: FLOOD }, (_, i) =>
        post('127.0.0.5', agent, { mailboxAddress: victim.address, password: i % 2 ? PASSWORD : `wrong-${i}` }),
      ),
    );
    await new Promise((r) => setTimeout(r, 50));
    const during = await uploadMs();
    const results = await flood;
    agent.destroy();
    const peak = server.runtime.services.hashes.peak;
    const byStatus = new Map<number, number>();
    for (const r of results) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    const cap = server.runtime.services.config.PASSWORD_HASH_CONCURRENCY;
    recordFigure({
      suite: SUITE,
      name: 'password hashes running at once (peak)',
      value: peak,
      target: `≤ ${cap}`,
      pass: peak <= cap && peak > 0,
    });
    recordFigure({
      suite: SUITE,
      name: `answers to ${FLOOD} concurrent logins from 127.0.0.5`,
      value: [...byStatus].map(([k, v]) => `${k}×${v}`).join(', '),
      target: '200 / 401 / 429 only',
      pass: [...byStatus.keys()].every((k) => [200, 401, 429].includes(k)),
    });
    zeroFigure(SUITE, 'answers 500 during the flood', byStatus.get(500) ?? 0);
    recordFigure({
      suite: SUITE,
      name: 'a 4 MiB upload during the flood (before it)',
      value: `${during.toFixed(0)} ms (${baseline.toFixed(0)} ms)`,
      target: '< 10 s (was 43 s)',
      pass: during < 10_000,
    });
    expect(peak).toBeLessThanOrEqual(cap);
    expect(peak).toBeGreaterThan(0);
    expect(byStatus.get(500) ?? 0).toBe(0);
    expect([...byStatus.keys()].every((k) => [200, 401, 429].includes(k))).toBe(true);
    expect(byStatus.get(429) ?? 0).toBeGreaterThan(0);
  });

  it("the owner's right password from a second address is never refused while another address attacks it", async () => {
    const attacker = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const owner = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let stop = false;
    let attempts = 0;
    const attack = (async () => {
      while (!stop) {
        await Promise.all(
          Array.from({ length: 8 }, () =>
            post('127.0.0.7', attacker, { mailboxAddress: victim.address, password: `guess-${attempts++}` }),
          ),
        );
      }
    })();
    const ownerStatuses: number[] = [];
    for (let i = 0; i < 10; i++)
      ownerStatuses.push(
        (await post('127.0.0.8', owner, { mailboxAddress: victim.address, password: PASSWORD })).status,
      );
    stop = true;
    await attack;
    attacker.destroy();
    owner.destroy();
    const refused = ownerStatuses.filter((s) => s !== 200).length;
    zeroFigure(
      SUITE,
      `owner's logins from 127.0.0.8 refused during an attack from 127.0.0.7 (${attempts} guesses)`,
      refused,
    );
    expect(ownerStatuses).toEqual(Array(10).fill(200));
  });
});
