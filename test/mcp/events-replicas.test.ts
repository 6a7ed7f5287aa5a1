import { randomBytes } from 'node:crypto';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, createScratchDatabase, ENGINE } from '../support/harness.js';
import {
  freePort,
  privateRedis,
  seedDomain,
  serveProcess,
  type PrivateRedis,
  type ServeProcess,
} from '../support/processes.js';
import { openEventStream } from './event-stream.js';

// An events/stream held on one api process receives mail that arrived on port 25 of another
// process (PostgreSQL + a private Redis): the stream is woken by the shared bus and reads the
// shared log, so no replica needs to have seen the write. PostgreSQL only (PGlite is embedded).
let redis: PrivateRedis;
let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
let A: ServeProcess;
let B: ServeProcess;
let mx: number;
let domain: { name: string; token: string };
let R: { address: string; token: string };

describe.skipIf(ENGINE !== 'postgres')('events/stream across two server processes', () => {
  beforeAll(async () => {
    redis = await privateRedis();
    scratch = await createScratchDatabase();
    mx = await freePort();
    const env = {
      DATABASE_URL: scratch.url,
      REDIS_URL: redis.url,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      WORKER_POLL_INTERVAL: '200ms',
      DATABASE_POOL_MAX: '4',
    };
    // Migrate and mint the domain token through the core before the servers start.
    domain = await seedDomain(env, `ev-${randomBytes(3).toString('hex')}.test`);
    // A holds the stream (api only); B takes the mail (SMTP port 25 and the worker).
    A = await serveProcess(env, 'api');
    B = await serveProcess(
      { ...env, SMTP_MX_PORT: String(mx), SMTP_SUBMISSION_PORT: String(await freePort()) },
      'api,smtp,worker',
    );
    await Promise.all([A.start(), B.start()]);
    const res = await apiClient(B.url, domain.token).post('/api/mailboxes', { address: `rcpt@${domain.name}` });
    expect(res.status).toBe(201);
    R = { address: res.body.data.mailbox.address, token: res.body.data.initialAccessToken };
  }, 180_000);

  afterAll(async () => {
    await Promise.all([A?.stop(), B?.stop()]);
    await redis?.kill();
    await scratch?.drop();
  }, 60_000);

  it('a stream on A gets each message delivered to port 25 of B, once, in order', async () => {
    const stream = await openEventStream(A.url, R.token, { name: 'message.received', cursor: null });
    expect((await stream.next()).method).toBe('notifications/events/active');
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: mx, secure: false, ignoreTLS: true });
    const started = Date.now();
    for (const n of [1, 2, 3])
      await transport.sendMail({ from: 'x@remote.example', to: R.address, subject: `Replica ${n}`, text: 'hi' });
    transport.close();
    const got = [];
    for (let i = 0; i < 3; i++) {
      const m = await stream.next();
      expect(m.method).toBe('notifications/events/event');
      got.push(m.params);
    }
    // Woken by the bus, not by the heartbeat's re-read (15 s).
    expect(Date.now() - started).toBeLessThan(12_000);
    const ids = got.map((p) => Number(p.data.eventId));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(3);
    expect(got.map((p) => p.data.mailboxAddress)).toEqual([R.address, R.address, R.address]);
    stream.close();
  }, 60_000);
});
