import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { startDnsStub } from '../lib/dns-stub.js';
import { freePort, redisServer, serve, stopProcess } from '../lib/processes.js';
import { scratchDatabase, seedMailboxes, type SeededMailbox } from '../lib/scratch.js';
import { waitForGreeting } from '../smtp/postfix.js';

// The system the soak runs against: a scratch PostgreSQL database, a private redis-server, a DNS
// stub (SPF/DMARC of the inbound sender), two `api,realtime,worker` processes and one `smtp`.

export interface Service {
  name: string;
  url: string;
  child: ChildProcess;
}

export interface System {
  databaseUrl: string;
  databaseName: string;
  redis: ChildProcess;
  /** api-1, api-2, smtp. */
  services: Service[];
  apiUrls: string[];
  submissionPort: number;
  mxPort: number;
  mailboxes: SeededMailbox[];
  /** Error (and fatal) lines the services logged, and the first few of them. */
  errorLog: { lines: number; samples: string[] };
  close(): Promise<void>;
}

export const INBOUND_SENDER = 'news@sender.bench';

export async function startSystem(mailboxCount: number): Promise<System> {
  const db = await scratchDatabase('mbx_soak');
  const dns = await startDnsStub({
    'sender.bench': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_dmarc.sender.bench': { TXT: ['v=DMARC1; p=none'] },
  });
  const dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(path.join(tmpdir(), 'mbx-soak-'));
    dirs.push(d);
    return d;
  };
  const children: ChildProcess[] = [];
  const errorLog = { lines: 0, samples: [] as string[] };
  let closing = false;
  const close = async () => {
    closing = true;
    for (const c of children.reverse()) await stopProcess(c);
    await dns.close();
    await db.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  try {
    const redisPort = await freePort();
    const redis = await redisServer(redisPort);
    children.push(redis);
    const [api1, api2, smtpHttp, submissionPort, mxPort] = (await Promise.all(Array.from({ length: 5 }, freePort))) as [
      number,
      number,
      number,
      number,
      number,
    ];
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      DNS_SERVERS: dns.server,
      SMTP_HOSTNAME: 'mx.soak.test',
      SMTP_SUBMISSION_PORT: String(submissionPort),
      SMTP_MX_PORT: String(mxPort),
      // Sends per mailbox are not what the soak is about: the default 60/min would refuse part of the mix.
      SEND_RATE_LIMIT_PER_MINUTE: '1000000',
    };
    const mailboxes = await seedMailboxes(
      { ...env, MAILBOX_DATA_DIR: tempDir() },
      'soak.test',
      Array.from({ length: mailboxCount }, (_, i) => `m${String(i).padStart(2, '0')}`),
    );
    const services: Service[] = [];
    for (const [name, roles, port, extra] of [
      ['api-1', 'api,realtime,worker', api1, {}],
      ['api-2', 'api,realtime,worker', api2, {}],
      ['smtp', 'smtp', smtpHttp, { HEALTH_SERVER: 'true' }],
    ] as const) {
      const onStdout = (line: string) => {
        if (!/"level":"(error|fatal)"/.test(line)) return;
        errorLog.lines++;
        if (errorLog.samples.length < 10) errorLog.samples.push(`${name}: ${line.slice(0, 400)}`);
      };
      const child = await serve(roles, port, { ...env, ...extra, MAILBOX_DATA_DIR: tempDir() }, { onStdout });
      children.push(child);
      services.push({ name, url: `http://127.0.0.1:${port}`, child });
      child.once('exit', (code, signal) => {
        if (!closing) console.log(`service ${name} exited during the soak (${signal ?? code}): later figures fail`);
      });
    }
    await Promise.all([waitForGreeting(submissionPort), waitForGreeting(mxPort)]);
    return {
      databaseUrl: db.url,
      databaseName: new URL(db.url).pathname.slice(1),
      redis,
      services,
      apiUrls: services.slice(0, 2).map((s) => s.url),
      submissionPort,
      mxPort,
      mailboxes,
      errorLog,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
