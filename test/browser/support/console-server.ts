import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ENGINE, createScratchDatabase } from '../../support/harness.js';
import { mailboxArgs } from '../../support/mailbox-command.js';
import { spawn } from 'node:child_process';
import { freePort } from '../../support/processes.js';
import { startDnsStub } from '../../transport/dns-stub.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

export interface ConsoleServer {
  url: string;
  ports: { http: number; mx: number };
  dataDir: string;
  /** The quick-start domain token the Domain resource wrote (resources/example.yaml). */
  domainToken(): string;
  close(): Promise<void>;
}

/**
 * `mailbox serve` with every role and the quick-start resources, as `make run` starts it: on
 * PGlite under its data dir, or on a scratch PostgreSQL database with MAILBOX_TEST_ENGINE=postgres
 * (the default of the suite). DNS answers come from a local stub so SPF/DMARC checks of inbound
 * mail finish at once.
 */
export async function startConsoleServer(env: Record<string, string> = {}): Promise<ConsoleServer> {
  const dns = await startDnsStub({ 'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  const db = ENGINE === 'postgres' ? await createScratchDatabase() : null;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-console-'));
  const ports = { http: await freePort(), mx: await freePort(), submission: await freePort() };
  const url = `http://127.0.0.1:${ports.http}`;
  // Its own start-up budget: a fresh PGlite cluster under tsx on a loaded machine needs minutes.
  const child = spawn(process.execPath, [...mailboxArgs(), 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: String(ports.http),
      SMTP_MX_PORT: String(ports.mx),
      SMTP_SUBMISSION_PORT: String(ports.submission),
      MAILBOX_DATA_DIR: dataDir,
      MAILBOX_RESOURCES_DIR: path.join(ROOT, 'resources'),
      SMTP_ALLOW_INSECURE_AUTH: 'true',
      DNS_SERVERS: dns.server,
      ...(db ? { DATABASE_URL: db.url } : {}),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // The resource directory is applied just after start: wait until the quick-start login works.
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`mailbox serve exited with ${child.exitCode}`);
    const r = await fetch(`${url}/api/mailbox/auth/login/password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mailboxAddress: 'agent@example.test', password: 'agent-password-123' }),
    }).catch(() => null);
    if (r?.ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`quick-start login never succeeded (${r?.status ?? 'not listening'})`);
    }
    await new Promise((res) => setTimeout(res, 500));
  }
  return {
    url,
    ports,
    dataDir,
    domainToken: () =>
      (
        JSON.parse(readFileSync(path.join(dataDir, 'secrets/default/example-test-domain-token.json'), 'utf8')) as {
          accessToken: string;
        }
      ).accessToken,
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      await dns.close();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
