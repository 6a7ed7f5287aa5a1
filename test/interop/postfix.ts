import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Why a private Postfix cannot run here, or null when it can (installed, and we are root to start it). */
export function postfixUnavailable(): string | null {
  if (!existsSync('/usr/sbin/postfix')) return 'no /usr/sbin/postfix (scripts/ensure-postfix.sh installs it)';
  if (process.getuid?.() !== 0) return 'not root (Postfix starts its master as root)';
  return null;
}

export interface PrivatePostfix {
  /** The loopback port its smtpd listens on. */
  port: number;
  /** Lines of its own log file. */
  log(): string[];
  /** Resolves when its queue is empty (every message relayed or bounced). */
  drained(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * A Postfix 3 instance of its own: config, queue and data directories under a temporary folder,
 * smtpd on a free loopback port, everything relayed to `relayhost` (`[127.0.0.1]:port`), its log in
 * a file. `main` adds or overrides main.cf parameters (e.g. `smtpd_discard_ehlo_keywords`).
 */
export async function startPostfix(
  name: string,
  relayhost: string,
  main: Record<string, string> = {},
): Promise<PrivatePostfix> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `mbx-postfix-${name}-`));
  chmodSync(dir, 0o755); // the postfix user's daemons reach their data directory through it
  const conf = path.join(dir, 'conf');
  for (const d of ['conf', 'queue', 'data']) mkdirSync(path.join(dir, d));
  chownSync(path.join(dir, 'data'), Number((await run('id', ['-u', 'postfix'])).stdout.trim()), 0);
  const port = await freePort();
  const settings: Record<string, string> = {
    compatibility_level: '3.6',
    queue_directory: path.join(dir, 'queue'),
    data_directory: path.join(dir, 'data'),
    myhostname: `${name}.postfix.test`,
    mydestination: '',
    inet_interfaces: '127.0.0.1',
    inet_protocols: 'ipv4',
    mynetworks: '127.0.0.0/8',
    relayhost,
    smtputf8_enable: 'yes',
    smtp_tls_security_level: 'may',
    maillog_file: path.join(dir, 'maillog'),
    maillog_file_prefixes: os.tmpdir(),
    alias_maps: '',
    alias_database: '',
    smtpd_relay_restrictions: 'permit_mynetworks, reject',
    append_dot_mydomain: 'no',
    // Retry a deferred message quickly: tests wait for the outcome, not for Postfix's backoff.
    queue_run_delay: '1s',
    minimal_backoff_time: '1s',
    maximal_backoff_time: '2s',
    ...main,
  };
  writeFileSync(
    path.join(conf, 'main.cf'),
    Object.entries(settings)
      .map(([k, v]) => `${k} = ${v}`)
      .join('\n') + '\n',
  );
  writeFileSync(path.join(conf, 'master.cf'), readFileSync('/etc/postfix/master.cf'));
  const postconf = (...args: string[]) => run('/usr/sbin/postconf', ['-c', conf, ...args]);
  await postconf('-F', '*/*/chroot = n'); // no chroot: the instance lives in a temporary folder
  await postconf('-M#', 'smtp/inet');
  await postconf('-Me', `127.0.0.1:${port}/inet = 127.0.0.1:${port} inet n - n - - smtpd`);
  await run('/usr/sbin/postfix', ['-c', conf, 'start']).catch((err: Error) => {
    throw new Error(`postfix ${name} did not start: ${err.message}\n${tail(dir)}`);
  });
  await waitFor(
    async () => (await run('ss', ['-ltn'])).stdout.includes(`127.0.0.1:${port} `),
    15_000,
    `postfix ${name} listening`,
  );
  return {
    port,
    log: () => tail(dir).split('\n'),
    async drained(timeoutMs = 30_000) {
      await waitFor(
        async () => (await run('/usr/sbin/postqueue', ['-c', conf, '-j'])).stdout.trim() === '',
        timeoutMs,
        `postfix ${name} queue empty`,
      );
    },
    async stop() {
      await run('/usr/sbin/postfix', ['-c', conf, 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const tail = (dir: string): string => {
  const file = path.join(dir, 'maillog');
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-40).join('\n') : '(no log)';
};

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
