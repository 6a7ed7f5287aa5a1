import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { ENGINE, PG_ADMIN_URL, type TestServer } from '../support/harness.js';
import { loadConfig } from '../../src/config/config.js';
import { assertNoPlaintextAuth } from '../../src/channels/smtp/server-options.js';
import { loadTlsMaterial } from '../../src/channels/smtp/tls-material.js';
import { rowsOf, sendBody } from '../delivery/helpers.js';
import { registry } from '../../src/telemetry/metric-registry.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { loggedInWire, startSmtpTestServer, submissionPort } from './world.js';

let server: TestServer;
let x: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
let bob: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);

beforeAll(async () => {
  server = await startSmtpTestServer({
    env: { SMTP_MAX_CONNECTIONS_PER_CLIENT: '4', SMTP_IDLE_TIMEOUT: '1500ms', AUTH_FAILURES_PER_15M: '3' },
  });
  x = await server.createDomain(undefined, { sendRateLimitPerMinute: 2 });
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  bob = await server.createMailbox(x.token, `bob@${x.name}`, 'Bob');
});
afterAll(async () => {
  await server?.close();
});

const loggedIn = (): Promise<SmtpWire> => loggedInWire(server, alice);

async function submit(wire: SmtpWire, subject: string): Promise<string> {
  await wire.cmd(`MAIL FROM:<${alice.address}>`, 250);
  await wire.cmd(`RCPT TO:<${bob.address}>`, 250);
  await wire.cmd('DATA', 354);
  wire.write(`${rfc5322({ from: alice.address, to: bob.address, subject })}.\r\n`);
  return (await wire.reply()).last;
}

describe('submission shares the core limits and never says 250 without a commit', () => {
  it('spends the per-mailbox rate limit shared with HTTP and answers 451 4.7.1 with the wait', async () => {
    expect((await server.api(alice.token).post('/api/messages/send', sendBody(bob.address))).status).toBe(202);
    const wire = await loggedIn();
    expect(await submit(wire, 'within budget')).toMatch(/^250 /);
    expect(await submit(wire, 'over budget')).toMatch(/^451 4\.7\.1 Rate limit exceeded, try again in \d+ s$/);
    wire.close();
    const http = await server.api(alice.token).post('/api/messages/send', sendBody(bob.address));
    expect(http.status).toBe(429);
    await q`update domain set send_rate_limit_per_minute = 100000 where id = ${x.domainId}`;
  });

  // A real outage (no patched storage). PostgreSQL only: PGlite lives inside the process and has
  // no outage to have; the reply mapping is the same for both engines.
  it.runIf(ENGINE === 'postgres')(
    'answers 451 4.3.0 when PostgreSQL really goes away mid-DATA, and 250 again once it is back',
    async () => {
      const wire = await loggedIn();
      await wire.cmd(`MAIL FROM:<${alice.address}>`, 250);
      await wire.cmd(`RCPT TO:<${bob.address}>`, 250);
      await wire.cmd('DATA', 354);
      const name = new URL(server.databaseUrl!).pathname.slice(1);
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      try {
        await admin.query(`alter database ${name} allow_connections false`);
        await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name]);
        wire.write(`${rfc5322({ from: alice.address, to: bob.address, subject: 'pg gone' })}.\r\n`);
        expect((await wire.reply()).last).toMatch(/^451 4\.3\.0 /);
        // The next transaction is refused too: 451 4.3.0, or 454 4.7.0 where MAIL FROM re-checks the
        // token after the auth cache expired (docs/api.md, Durability). Never a 250.
        expect((await wire.cmd(`MAIL FROM:<${alice.address}>`)).last).toMatch(/^(451 4\.3\.0|454 4\.7\.0) /);
      } finally {
        await admin.query(`alter database ${name} allow_connections true`);
        await admin.end();
      }
      expect(await submit(wire, 'pg back')).toMatch(/^250 /);
      wire.close();
      expect(await q`select id from message where subject = 'pg gone'`).toEqual([]);
    },
  );

  it('limits concurrent connections per client address (421 4.7.0) and frees the slot on close', async () => {
    const open = await Promise.all([1, 2, 3, 4].map(() => SmtpWire.connect(submissionPort(server))));
    const fifth = await SmtpWire.connect(submissionPort(server), null);
    expect((await fifth.reply()).last).toBe('421 4.7.0 Too many connections, try again later');
    expect(await fifth.closed()).toBe(true);
    open[0]!.close();
    await new Promise((r) => setTimeout(r, 100));
    const again = await SmtpWire.connect(submissionPort(server));
    again.close();
    open.forEach((w) => w.close());
  });

  it('disconnects an idle client', async () => {
    const wire = await SmtpWire.connect(submissionPort(server));
    await wire.ehlo();
    const reply = await wire.reply(5_000);
    expect(reply.code).toBe(421);
    expect(await wire.closed()).toBe(true);
  });

  it('counts sessions and messages in the SMTP metrics', async () => {
    const text = await registry.getSingleMetricAsString('mailbox_smtp_sessions_total');
    expect(text).toMatch(/mailbox_smtp_sessions_total\{listener="submission",outcome="accepted"\} [1-9]/);
    expect(text).toMatch(/outcome="refused"/);
    const messages = await registry.getSingleMetricAsString('mailbox_smtp_messages_total');
    expect(messages).toMatch(/listener="submission",outcome="accepted"\} [1-9]/);
    expect(messages).toMatch(/listener="submission",outcome="deferred"\} [1-9]/);
  });

  // Last: it exhausts the AUTH budget of 127.0.0.1 for this server.
  it('throttles failed AUTH per client address with 454 4.7.0, while good credentials still get 235', async () => {
    for (let i = 0; i < 3; i++) {
      const wire = await SmtpWire.connect(submissionPort(server));
      expect((await wire.login(alice.address, 'wrong')).last).toMatch(
        /^535 5\.7\.8 Authentication credentials invalid/,
      );
      wire.close();
    }
    const bad = await SmtpWire.connect(submissionPort(server));
    expect((await bad.login(alice.address, 'wrong')).last).toMatch(/^454 4\.7\.0 .*try again in \d+ s$/);
    bad.close();
    const wire = await SmtpWire.connect(submissionPort(server));
    expect((await wire.login(alice.address, alice.token)).code).toBe(235);
    expect(await submit(wire, 'after the failures')).toMatch(/^250 /);
    wire.close();
    // HTTP, same address and budget: a good token is 200, a wrong one 429.
    expect((await server.api(alice.token).get('/api/messages?limit=1')).status).toBe(200);
    expect((await server.api('mbx_wrong').get('/api/messages?limit=1')).status).toBe(429);
  });
});

describe('configurations that would take AUTH in plaintext', () => {
  const base = { MAILBOX_DATA_DIR: '/nonexistent', HOST: '127.0.0.1' };
  it('refuses SMTP_ALLOW_INSECURE_AUTH on a non-loopback address, STARTTLS switched off, and half a TLS configuration', async () => {
    const options = { key: 'k', cert: 'c', disabledCommands: [] as string[] };
    expect(() =>
      assertNoPlaintextAuth(options, loadConfig({ ...base, HOST: '0.0.0.0', SMTP_ALLOW_INSECURE_AUTH: 'true' })),
    ).toThrow(/SMTP_ALLOW_INSECURE_AUTH=true accepts passwords in plaintext and HOST=0.0.0.0 is not loopback/);
    expect(() => assertNoPlaintextAuth({ ...options, disabledCommands: ['STARTTLS'] }, loadConfig(base))).toThrow(
      /STARTTLS is off/,
    );
    expect(() => assertNoPlaintextAuth({ ...options, allowInsecureAuth: true }, loadConfig(base))).toThrow(
      /allowInsecureAuth is on/,
    );
    expect(() => assertNoPlaintextAuth({ disabledCommands: [] }, loadConfig(base))).toThrow(/no TLS certificate/);
    expect(() => assertNoPlaintextAuth(options, loadConfig(base))).not.toThrow();
    await expect(
      loadTlsMaterial(loadConfig({ ...base, SMTP_TLS_CERT: '/nonexistent/cert.pem' }), 'mail.test'),
    ).rejects.toThrow(/must be set together/);
    await expect(
      loadTlsMaterial(
        loadConfig({ ...base, SMTP_TLS_CERT: '/nonexistent/cert.pem', SMTP_TLS_KEY: '/nonexistent/key.pem' }),
        'mail.test',
      ),
    ).rejects.toThrow(/cannot read/);
  });

  it('offers AUTH before TLS only with SMTP_ALLOW_INSECURE_AUTH=true on loopback', async () => {
    const dev = await startSmtpTestServer({ env: { SMTP_ALLOW_INSECURE_AUTH: 'true' } });
    try {
      const d = await dev.createDomain();
      const m = await dev.createMailbox(d.token, `dev@${d.name}`);
      const wire = await SmtpWire.connect(submissionPort(dev));
      expect(await wire.ehlo()).toContain('AUTH PLAIN LOGIN');
      expect((await wire.auth(m.address, m.token)).code).toBe(235);
      wire.close();
    } finally {
      await dev.close();
    }
  });
});
