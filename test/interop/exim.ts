import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './postfix.js';

const run = promisify(execFile);

/** Debian's Exim 4, unpacked (not installed) by scripts/ensure-exim.sh. */
const ROOT = path.resolve(import.meta.dirname, '../../.cache/exim/root');
const EXIM = path.join(ROOT, 'usr/sbin/exim4');
/** The binary's compiled-in user (EXIM_USER=ref:Debian-exim), looked up before any configuration. */
const EXIM_USER = 'Debian-exim';

/** The unpacked libraries the machine lacks (libidn12 on a bare Debian), for the loader. */
const libraryPath = (): string =>
  ['lib', 'usr/lib']
    .flatMap((dir) => {
      const full = path.join(ROOT, dir);
      return existsSync(full)
        ? readdirSync(full)
            .filter((d) => d.endsWith('-linux-gnu'))
            .map((d) => path.join(full, d))
        : [];
    })
    .join(':');
const env = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', LD_LIBRARY_PATH: libraryPath() });

/**
 * Why a private Exim cannot run here, or null when it can: unpacked, its user present, root to
 * start it (the daemon binds and hands its spool to the Exim user), and a build with what the
 * tests exercise (I18N for SMTPUTF8, GnuTLS for STARTTLS; Debian's exim4-daemon-light has both).
 */
export function eximUnavailable(): string | null {
  if (!existsSync(EXIM)) return `no ${path.relative(process.cwd(), EXIM)} (scripts/ensure-exim.sh unpacks it)`;
  if (process.getuid?.() !== 0) return 'not root (the Exim daemon starts as root)';
  try {
    execFileSync('getent', ['passwd', EXIM_USER], { stdio: 'ignore' });
  } catch {
    return `no ${EXIM_USER} user (scripts/ensure-exim.sh adds it)`;
  }
  let version: string;
  try {
    version = execFileSync(EXIM, ['-C', '/dev/null', '-bV'], { env: env(), encoding: 'utf8', stdio: 'pipe' });
  } catch (err) {
    return `exim does not run: ${(err as Error).message.split('\n')[0]}`;
  }
  const support = /^Support for: (.*)$/m.exec(version)?.[1]?.split(' ') ?? [];
  const lacking = ['I18N', 'GnuTLS'].filter((f) => !support.includes(f));
  return lacking.length ? `this Exim build lacks ${lacking.join(', ')}` : null;
}

export interface EximRoute {
  /** An Exim domain list (`sender.example : bücher.example`, `*`); routes are tried in order. */
  domains: string;
  /** The loopback port mail for those domains is sent to. */
  port: number;
}

export interface EximOptions {
  /** Offer STARTTLS with this certificate (PEM). */
  tls?: { certPem: string; keyPem: string };
  /** Relay only for a client that authenticated with AUTH PLAIN (offered after STARTTLS only). */
  auth?: { user: string; pass: string };
  /** ACL statements checked at RCPT TO before the final accept (`deny recipients = …`). */
  rcptAcl?: string;
}

export interface PrivateExim {
  /** The loopback port its daemon listens on. */
  port: number;
  /** A folder for files the configuration looks at (`${if exists{…}}`), readable by the Exim user. */
  dir: string;
  /** The lines of its main log. */
  log(): string[];
  /** The ids of the messages its queue holds (`exim -bp`). */
  queue(): Promise<string[]>;
  /** Resolves when its queue is empty (every message delivered or bounced). */
  drained(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * An Exim 4 instance of its own: a configuration file written here and named with -C (the
 * daemon is started by root, which keeps its privilege with -C; Exim's own re-executions run as
 * the Exim user with deliver_drop_privilege, so no trusted-configuration list is needed), spool
 * and log under a temporary folder, the daemon on a free loopback port in the foreground
 * (`-bdf`), a queue run every second and retries a second apart, so that a deferred address is
 * tried again while a test waits.
 */
export async function startExim(name: string, routes: EximRoute[], o: EximOptions = {}): Promise<PrivateExim> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `mbx-exim-${name}-`));
  chmodSync(dir, 0o755); // the Exim user's processes reach the spool, the log and the files through it
  const ids = await userIds();
  for (const d of ['spool', 'log']) {
    mkdirSync(path.join(dir, d));
    chownSync(path.join(dir, d), ids.uid, ids.gid);
  }
  if (o.tls) {
    writeFileSync(path.join(dir, 'cert.pem'), o.tls.certPem);
    writeFileSync(path.join(dir, 'key.pem'), o.tls.keyPem, { mode: 0o640 });
    chownSync(path.join(dir, 'key.pem'), 0, ids.gid);
  }
  const port = await freePort();
  const config = path.join(dir, 'exim.conf');
  writeFileSync(config, configuration({ name, dir, port, routes, ...o }), { mode: 0o644 });
  const daemon = spawn(EXIM, ['-C', config, '-bdf', '-q1s'], { env: env(), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  daemon.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exim = (...args: string[]) => run(EXIM, ['-C', config, ...args], { env: env() });
  try {
    await waitFor(
      async () => {
        if (daemon.exitCode !== null) throw new Error(`exited ${daemon.exitCode}`);
        return (await run('ss', ['-ltn'])).stdout.includes(`127.0.0.1:${port} `);
      },
      15_000,
      `exim ${name} listening`,
    );
  } catch (err) {
    await stop(daemon);
    throw new Error(`exim ${name} did not start: ${(err as Error).message}\n${stderr}\n${mainlog(dir).join('\n')}`, {
      cause: err,
    });
  }
  // `-bp` prints each message as "<age> <size> <id> <sender>", its recipients indented below.
  const queue = async () =>
    [...(await exim('-bp')).stdout.matchAll(/^\s*\d+[smhdw]\s+\S+\s+(\S+)\s+</gm)].map((m) => m[1]!);
  return {
    port,
    dir,
    log: () => mainlog(dir),
    queue,
    async drained(timeoutMs = 30_000) {
      await waitFor(async () => (await queue()).length === 0, timeoutMs, `exim ${name} queue empty`);
    },
    async stop() {
      await stop(daemon);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function userIds(): Promise<{ uid: number; gid: number }> {
  const id = async (flag: string) => Number((await run('id', [flag, EXIM_USER])).stdout.trim());
  return { uid: await id('-u'), gid: await id('-g') };
}

function configuration(c: EximOptions & { name: string; dir: string; port: number; routes: EximRoute[] }): string {
  const lines = [
    `primary_hostname = ${c.name}.exim.test`,
    // Its re-executions (a bounce, a queue run) start this binary, not the system's /usr/sbin/exim.
    `exim_path = ${EXIM}`,
    `spool_directory = ${c.dir}/spool`,
    `log_file_path = ${c.dir}/log/%slog`,
    `pid_file_path = ${c.dir}/exim.pid`,
    'keep_environment = LD_LIBRARY_PATH',
    'deliver_drop_privilege = true',
    'local_interfaces = <; 127.0.0.1',
    `daemon_smtp_ports = ${c.port}`,
    'host_lookup =',
    'rfc1413_query_timeout = 0s',
    'log_selector = -queue_run +received_recipients +subject +8bitmime',
    'smtputf8_advertise_hosts = *',
    `tls_advertise_hosts = ${c.tls ? '*' : ''}`,
    ...(c.tls ? [`tls_certificate = ${c.dir}/cert.pem`, `tls_privatekey = ${c.dir}/key.pem`] : []),
    'acl_smtp_rcpt = acl_rcpt',
    'timeout_frozen_after = 1h',
    '',
    'begin acl',
    'acl_rcpt:',
    c.rcptAcl ?? '',
    ...(c.auth
      ? ['  accept authenticated = *', '  deny message = 5.7.1 Relaying requires authentication']
      : ['  accept hosts = 127.0.0.1', '  deny']),
    '',
    'begin routers',
    ...c.routes.flatMap((r, i) => [
      `route${i}:`,
      '  driver = manualroute',
      `  domains = ${r.domains}`,
      '  route_list = * 127.0.0.1',
      // 127.0.0.1 is also this host: send there anyway (the port differs).
      '  self = send',
      `  transport = smtp${i}`,
    ]),
    '',
    'begin transports',
    ...c.routes.flatMap((r, i) => [`smtp${i}:`, '  driver = smtp', `  port = ${r.port}`]),
    '',
    'begin retry',
    '* * F,1h,1s',
    '',
    ...(c.auth
      ? [
          'begin authenticators',
          'plain:',
          '  driver = plaintext',
          '  public_name = PLAIN',
          '  server_advertise_condition = ${if def:tls_in_cipher}',
          '  server_prompts = :',
          `  server_condition = \${if and {{eq{$auth2}{${c.auth.user}}}{eq{$auth3}{${c.auth.pass}}}}}`,
          '  server_set_id = $auth2',
        ]
      : []),
  ];
  return lines.join('\n') + '\n';
}

async function stop(daemon: ChildProcess): Promise<void> {
  if (daemon.exitCode !== null || daemon.signalCode !== null) return;
  const exited = new Promise((resolve) => daemon.once('exit', resolve));
  daemon.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
}

const mainlog = (dir: string): string[] => {
  const file = path.join(dir, 'log', 'mainlog');
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n') : ['(no log)'];
};

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
