import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../../src/config/config.js';
import { mintTokenPlaintext } from '../../src/core/tokens/token-format.js';
import { createScratchDatabase } from '../support/harness.js';
import { seedDomain, serviceProcess, type ServiceProcess } from '../support/processes.js';
import { SmtpWire, rfc5322 } from '../smtp/smtp-wire.js';
import { connect } from '../realtime/client.js';
import { boundClient, percentile, type BoundClient } from './support/client-address.js';
import { recordFigure, zeroFigure } from './support/figures.js';

// Issue 6, "Brute force": from one client address (127.0.0.1), 1 000 wrong bearer tokens over HTTP
// (well-formed, valid checksum: each would cost a database lookup) and 1 000 SMTP AUTH attempts,
// against a real service process with the default AUTH_FAILURES_PER_15M. The attacker gets
// answers for at most the budget, then 429 / 454 without its credentials being looked at, on every
// channel (one budget per address: docs/api.md, "Brute force and revocation"), while a second
// client from 127.0.0.2 is served throughout. Each attack runs against a fresh process (the
// budget is in memory without Redis), so each channel's own count starts from zero.

const SUITE = 'brute force';
const ATTEMPTS = 1000;
const ATTACKER_CONCURRENCY = 8;
const LIMIT = loadConfig({}).AUTH_FAILURES_PER_15M;
const OTHER = '127.0.0.2';

let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
let proc: ServiceProcess;
let domainToken: string;
let alice: { address: string; token: string };
let bob: { address: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  scratch = await createScratchDatabase();
  const env = { DATABASE_URL: scratch.url, MAILBOX_SECRET_KEY: randomBytes(32).toString('hex') };
  const seeded = await seedDomain(env);
  domainToken = seeded.token;
  proc = await serviceProcess(env, 'api,smtp,realtime');
  await proc.start();
  const create = async (local: string) => {
    const res = await fetch(`${proc.url}/api/mailboxes`, {
      method: 'POST', headers: { authorization: `Bearer ${domainToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ address: `${local}@${seeded.name}` }),
    });
    const body = (await res.json()) as any;
    if (res.status !== 201) throw new Error(`create mailbox: ${res.status} ${JSON.stringify(body)}`);
    return { address: body.data.mailbox.address as string, token: body.data.initialAccessToken as string };
  };
  alice = await create('alice');
  bob = await create('bob');
});
afterAll(async () => {
  await proc?.stop();
  await scratch?.drop();
});

/** Runs `n` jobs with at most `width` at a time. */
async function pool(n: number, width: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await job(next++);
  }));
}

/**
 * The second client, from 127.0.0.2, while an attack runs: HTTP reads with a good token in a loop
 * and, in parallel, complete SMTP submissions (STARTTLS, AUTH, one message). Every one must succeed.
 */
function secondClient(proc: ServiceProcess) {
  const http = boundClient(OTHER);
  const latencies: number[] = [];
  const failures: string[] = [];
  let smtpSessions = 0;
  let stop = false;
  const httpLoop = (async () => {
    while (!stop || latencies.length === 0) {
      const res = await http.request('GET', `${proc.url}/api/messages?limit=5`, { headers: { authorization: `Bearer ${alice.token}` } }).catch((e: Error) => ({ status: -1, ms: 0, body: e.message }));
      if (res.status === 200) latencies.push(res.ms);
      else failures.push(`HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      await sleep(5);
    }
  })();
  const smtpLoop = (async () => {
    while (!stop || smtpSessions === 0) {
      try {
        const wire = await SmtpWire.connect(proc.ports.submission, 220, OTHER);
        const auth = await wire.login(alice.address, alice.token);
        if (auth.code !== 235) throw new Error(`AUTH ${auth.last}`);
        await wire.cmd(`MAIL FROM:<${alice.address}>`, 250);
        await wire.cmd(`RCPT TO:<${bob.address}>`, 250);
        await wire.cmd('DATA', 354);
        wire.write(`${rfc5322({ from: alice.address, to: bob.address, subject: 'during the attack' })}.\r\n`);
        await wire.expect(250);
        wire.close();
        smtpSessions++;
      } catch (err) {
        failures.push(`SMTP ${(err as Error).message}`);
      }
    }
  })();
  return {
    async finish() {
      stop = true;
      await Promise.all([httpLoop, smtpLoop]);
      http.close();
      return { requests: latencies.length, p99: percentile(latencies, 99), smtpSessions, failures };
    },
  };
}

/** What the attacker gets on the other entry points once throttled, with a perfectly good token. */
async function otherEntryPoints(): Promise<{ http: number; httpRetryAfter: string | null; mcpRaw: number; mcpRetryAfter: string | null; mcpClient: number; socket: number; socketRetry: unknown; smtp: string }> {
  const httpRes = await fetch(`${proc.url}/api/messages?limit=1`, { headers: { authorization: `Bearer ${alice.token}` } });
  await httpRes.arrayBuffer();
  const mcpRes = await fetch(`${proc.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'attacker', version: '1' } } }),
  });
  const mcpBody = (await mcpRes.json()) as any;
  expect(mcpBody).toMatchObject({ code: mcpRes.status, data: null });
  let mcpClient = -1;
  const client = new Client({ name: 'attacker', version: '1' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', proc.url), { requestInit: { headers: { authorization: `Bearer ${alice.token}` } } }));
    mcpClient = 200;
  } catch (err) {
    mcpClient = err instanceof StreamableHTTPError && typeof err.code === 'number' ? err.code : -1;
  } finally {
    await client.close().catch(() => undefined);
  }
  const socketData = await new Promise<{ code: number; retryAfterSeconds?: number }>((resolve) => {
    const socket = connect(proc.url, { auth: { token: alice.token } });
    socket.once('connect', () => { socket.close(); resolve({ code: 200 }); });
    socket.once('connect_error', (err: Error & { data?: { code: number; retryAfterSeconds?: number } }) => { socket.close(); resolve(err.data ?? { code: -1 }); });
  });
  const wire = await SmtpWire.connect(proc.ports.submission);
  const smtp = (await wire.login(alice.address, alice.token)).last;
  wire.close();
  return {
    http: httpRes.status, httpRetryAfter: httpRes.headers.get('retry-after'), mcpRaw: mcpRes.status, mcpRetryAfter: mcpRes.headers.get('retry-after'),
    mcpClient, socket: socketData.code, socketRetry: socketData.retryAfterSeconds, smtp,
  };
}

/**
 * Runs `fn` while the access_token table is locked ACCESS EXCLUSIVE: any token lookup blocks until
 * the lock goes, so requests that complete meanwhile provably did not look a token up.
 */
async function withTokensLocked<T>(fn: () => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: scratch.url });
  await c.connect();
  try {
    await c.query('begin');
    await c.query('lock table access_token in access exclusive mode');
    return await fn();
  } finally {
    await c.query('rollback').catch(() => undefined);
    await c.end();
  }
}

describe('brute force from one address', () => {
  it(`HTTP: ${ATTEMPTS} wrong bearer tokens get ${LIMIT} answers, then 429 on every channel without a lookup; 127.0.0.2 is served`, async () => {
    const other = secondClient(proc);
    const statuses: number[] = [];
    let retryAfterMissing = 0;
    const t0 = performance.now();
    await pool(ATTEMPTS, ATTACKER_CONCURRENCY, async (i) => {
      const res = await fetch(`${proc.url}/api/messages`, { headers: { authorization: `Bearer ${mintTokenPlaintext(i % 2 ? 'mailbox' : 'domain')}` } });
      const body = (await res.json()) as any;
      statuses.push(res.status);
      if (res.status === 429 && (!res.headers.get('retry-after') || body.code !== 429 || body.data !== null)) retryAfterMissing++;
    });
    const elapsed = performance.now() - t0;
    const entry = await otherEntryPoints();
    const served = await other.finish();

    // "Without checking the token": with access_token locked, a lookup cannot finish. The
    // attacker's 100 further wrong tokens are all answered (429) meanwhile, while a wrong token
    // from an address with budget left (127.0.0.3, the control) is still waiting for the lock.
    const third = boundClient('127.0.0.3');
    const locked = await withTokensLocked(async () => {
      const control = third.request('GET', `${proc.url}/api/messages`, { headers: { authorization: `Bearer ${mintTokenPlaintext('mailbox')}` } });
      const answers = await Promise.all(Array.from({ length: 100 }, () => fetch(`${proc.url}/api/messages`, { headers: { authorization: `Bearer ${mintTokenPlaintext('mailbox')}` }, signal: AbortSignal.timeout(30_000) })
        .then(async (r) => { await r.arrayBuffer(); return r.status; }, () => -1)));
      const controlWaiting = await Promise.race([control.then(() => false), sleep(1000).then(() => true)]);
      return { answers, controlWaiting, control };
    });
    const controlAfter = (await locked.control).status;
    third.close();
    const throttledAnswered = locked.answers.filter((s) => s === 429).length;
    const answered = statuses.filter((s) => s === 401).length;
    const throttled = statuses.filter((s) => s === 429).length;
    recordFigure({ suite: SUITE, name: `HTTP: wrong bearer tokens from 127.0.0.1, sent in ${(elapsed / 1000).toFixed(1)} s`, value: statuses.length, target: `${ATTEMPTS} in < 60 s`, pass: statuses.length === ATTEMPTS && elapsed < 60_000 });
    recordFigure({ suite: SUITE, name: 'HTTP: attempts answered (401) before throttling', value: answered, target: `≤ ${LIMIT} (AUTH_FAILURES_PER_15M default)`, pass: answered <= LIMIT && answered > 0 });
    recordFigure({ suite: SUITE, name: 'HTTP: throttled share (429 + Retry-After, envelope)', value: `${((100 * throttled) / ATTEMPTS).toFixed(1)} %`, target: `${ATTEMPTS - LIMIT}/${ATTEMPTS}`, pass: throttled === ATTEMPTS - answered && retryAfterMissing === 0 });
    recordFigure({ suite: SUITE, name: 'HTTP: throttled requests answered while access_token is locked (no lookup), control lookup blocked', value: `${throttledAnswered}/100, control ${locked.controlWaiting ? 'blocked' : 'answered'}`, target: '100/100, control blocked', pass: throttledAnswered === 100 && locked.controlWaiting });
    recordFigure({ suite: SUITE, name: 'attacker after the HTTP attack, good token: HTTP / MCP (raw, SDK client) / Socket.IO / SMTP AUTH', value: `${entry.http} / ${entry.mcpRaw}, ${entry.mcpClient} / ${entry.socket} / ${entry.smtp.slice(0, 9)}`, target: '429 / 429 / 429 / 454 4.7.0', pass: entry.http === 429 && entry.mcpRaw === 429 && entry.mcpClient === 429 && entry.socket === 429 && entry.smtp.startsWith('454 4.7.0') });
    zeroFigure(SUITE, `127.0.0.2 during the HTTP attack: failures (of ${served.requests} HTTP requests, ${served.smtpSessions} SMTP submissions)`, served.failures.length);
    recordFigure({ suite: SUITE, name: '127.0.0.2 during the HTTP attack: HTTP latency p99', value: `${served.p99.toFixed(1)} ms`, target: 'recorded', pass: Number.isFinite(served.p99) });

    expect(statuses).toHaveLength(ATTEMPTS);
    expect(elapsed).toBeLessThan(60_000);
    expect(answered).toBe(LIMIT);
    expect(throttled).toBe(ATTEMPTS - LIMIT);
    expect(retryAfterMissing).toBe(0);
    expect(throttledAnswered).toBe(100);
    expect(locked.controlWaiting).toBe(true);
    expect(controlAfter).toBe(401);
    expect(entry).toMatchObject({ http: 429, mcpRaw: 429, mcpClient: 429, socket: 429 });
    expect(Number(entry.httpRetryAfter)).toBeGreaterThan(0);
    expect(Number(entry.mcpRetryAfter)).toBeGreaterThan(0);
    expect(entry.socketRetry).toEqual(expect.any(Number));
    expect(entry.smtp).toMatch(/^454 4\.7\.0 .*try again in \d+ s$/);
    expect(served.failures).toEqual([]);
    expect(served.requests).toBeGreaterThan(0);
    expect(served.smtpSessions).toBeGreaterThan(0);
  });

  it(`SMTP: ${ATTEMPTS} AUTH attempts get ${LIMIT} answers, then 454 4.7.0, and the budget holds on HTTP, MCP and Socket.IO; 127.0.0.2 is served`, async () => {
    // A fresh process: a fresh in-memory budget, so SMTP's own count starts at zero.
    await proc.kill('SIGTERM');
    await proc.start();
    const other = secondClient(proc);
    const replies: string[] = [];
    const t0 = performance.now();
    const PER_CONNECTION = 10;
    await pool(Math.ceil(ATTEMPTS / PER_CONNECTION), ATTACKER_CONCURRENCY, async () => {
      const wire = await SmtpWire.connect(proc.ports.submission);
      await wire.ehlo();
      await wire.starttls();
      await wire.ehlo();
      for (let k = 0; k < PER_CONNECTION && replies.length < ATTEMPTS; k++) {
        const r = await wire.auth(alice.address, mintTokenPlaintext('mailbox'));
        replies.push(r.last);
      }
      wire.close();
    });
    const elapsed = performance.now() - t0;
    const entry = await otherEntryPoints();
    const served = await other.finish();

    const answered = replies.filter((r) => r === '535 5.7.8 Authentication credentials invalid').length;
    const throttled = replies.filter((r) => /^454 4\.7\.0 .*try again in \d+ s$/.test(r)).length;
    recordFigure({ suite: SUITE, name: `SMTP: AUTH attempts from 127.0.0.1, sent in ${(elapsed / 1000).toFixed(1)} s`, value: replies.length, target: `${ATTEMPTS} in < 60 s`, pass: replies.length === ATTEMPTS && elapsed < 60_000 });
    recordFigure({ suite: SUITE, name: 'SMTP: attempts answered (535 5.7.8) before throttling', value: answered, target: `≤ ${LIMIT}`, pass: answered <= LIMIT && answered > 0 });
    recordFigure({ suite: SUITE, name: 'SMTP: throttled share (454 4.7.0 with the wait)', value: `${((100 * throttled) / ATTEMPTS).toFixed(1)} %`, target: `${ATTEMPTS - LIMIT}/${ATTEMPTS}`, pass: throttled === ATTEMPTS - answered });
    recordFigure({ suite: SUITE, name: 'attacker after the SMTP attack, good token: HTTP / MCP (raw, SDK client) / Socket.IO / SMTP AUTH', value: `${entry.http} / ${entry.mcpRaw}, ${entry.mcpClient} / ${entry.socket} / ${entry.smtp.slice(0, 9)}`, target: '429 / 429 / 429 / 454 4.7.0 (one budget)', pass: entry.http === 429 && entry.mcpRaw === 429 && entry.mcpClient === 429 && entry.socket === 429 && entry.smtp.startsWith('454 4.7.0') });
    zeroFigure(SUITE, `127.0.0.2 during the SMTP attack: failures (of ${served.requests} HTTP requests, ${served.smtpSessions} SMTP submissions)`, served.failures.length);
    recordFigure({ suite: SUITE, name: '127.0.0.2 during the SMTP attack: HTTP latency p99', value: `${served.p99.toFixed(1)} ms`, target: 'recorded', pass: Number.isFinite(served.p99) });

    expect(replies).toHaveLength(ATTEMPTS);
    expect(elapsed).toBeLessThan(60_000);
    expect(answered).toBe(LIMIT);
    expect(throttled).toBe(ATTEMPTS - LIMIT);
    expect(entry).toMatchObject({ http: 429, mcpRaw: 429, mcpClient: 429, socket: 429 });
    expect(entry.smtp).toMatch(/^454 4\.7\.0 /);
    expect(served.failures).toEqual([]);
    expect(served.requests).toBeGreaterThan(0);
    expect(served.smtpSessions).toBeGreaterThan(0);
  });
});
