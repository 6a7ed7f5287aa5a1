import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const POSTFIX = '/usr/sbin/postfix';
export const SMTP_SINK = '/usr/sbin/smtp-sink';

/** Why Postfix cannot run here, or null when it can (Debian's package, run as root). */
export function postfixUnavailable(): string | null {
  if (!existsSync(POSTFIX) || !existsSync(SMTP_SINK))
    return 'Postfix is not installed (DEBIAN_FRONTEND=noninteractive apt-get install -y postfix)';
  if (process.getuid?.() !== 0) return "Postfix's master must start as root";
  if (spawnSync('id', ['-u', 'postfix']).status !== 0) return 'the postfix user is missing';
  return null;
}

/** Resolves once something on the port sends an SMTP greeting. */
export async function waitForGreeting(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('data', (d) => {
        s.destroy();
        resolve(d.toString().startsWith('220'));
      });
      s.once('error', () => resolve(false));
      setTimeout(() => {
        s.destroy();
        resolve(false);
      }, 2000);
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`nothing greets on port ${port}`);
}

/**
 * A private Postfix instance (`postfix -c <dir>/etc start-fg`) with its own queue under `dir`,
 * listening on 127.0.0.1:`port` only. smtpd accepts from 127.0.0.0/8 for any recipient and puts
 * every message on hold, so it is measured writing into its queue (cleanup fsyncs each queue
 * file, Postfix's default) without the delivery agents competing for the CPU. STARTTLS is
 * offered with `tls`; there is no SASL, so its clients do not authenticate.
 */
export async function startPostfix(
  dir: string,
  port: number,
  tls: { cert: string; key: string },
): Promise<{ stop(): Promise<void>; masterPid(): number }> {
  const etc = path.join(dir, 'etc');
  // Postfix's daemons run as the postfix user and must reach the queue (mkdtemp makes 0700).
  chmodSync(dir, 0o755);
  for (const d of [etc, path.join(dir, 'queue'), path.join(dir, 'data')]) mkdirSync(d, { recursive: true });
  const uid = Number(spawnSync('id', ['-u', 'postfix']).stdout.toString().trim());
  chownSync(path.join(dir, 'data'), uid, 0);
  writeFileSync(path.join(etc, 'cert.pem'), tls.cert);
  writeFileSync(path.join(etc, 'key.pem'), tls.key, { mode: 0o600 });
  writeFileSync(
    path.join(etc, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${dir}/queue`,
      `data_directory = ${dir}/data`,
      'mail_owner = postfix',
      'setgid_group = postdrop',
      'inet_interfaces = 127.0.0.1',
      'inet_protocols = ipv4',
      'myhostname = postfix.bench.test',
      'mydestination =',
      'mynetworks = 127.0.0.0/8',
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      'smtpd_end_of_data_restrictions = check_client_access static:HOLD',
      'alias_maps =',
      'alias_database =',
      'local_recipient_maps =',
      'maillog_file = /dev/stdout',
      'message_size_limit = 36700160',
      `smtpd_tls_cert_file = ${etc}/cert.pem`,
      `smtpd_tls_key_file = ${etc}/key.pem`,
      'smtpd_tls_security_level = may',
      'smtpd_tls_protocols = >=TLSv1.2',
      '',
    ].join('\n'),
  );
  // Debian's master.cf with the smtp listener moved to our port and every chroot column "n".
  const master = readFileSync('/etc/postfix/master.cf', 'utf8')
    .split('\n')
    .map((line) => {
      if (/^smtp\s+inet\s/.test(line)) return `127.0.0.1:${port} inet n - n - - smtpd`;
      return line.replace(/^(\S+\s+(?:unix|inet|fifo|pass|unix-dgram)\s+[-yn]\s+[-yn]\s+)[-yn]/, '$1n');
    })
    .join('\n');
  writeFileSync(path.join(etc, 'master.cf'), master);
  const log = openSync(path.join(dir, 'postfix.log'), 'a');
  const child = spawn(POSTFIX, ['-c', etc, 'start-fg'], { stdio: ['ignore', log, log] });
  const stop = async () => {
    // master outlives the start-fg wrapper; `postfix stop` ends the instance itself.
    spawnSync(POSTFIX, ['-c', etc, 'stop']);
    await new Promise((r) => setTimeout(r, 500));
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  try {
    await waitForGreeting(port);
  } catch (err) {
    await stop();
    throw err;
  }
  // The master's pid file (its daemons are its children): bench/smtp counts their CPU.
  const masterPid = () => Number(readFileSync(path.join(dir, 'queue', 'pid', 'master.pid'), 'utf8').trim());
  return { stop, masterPid };
}

/** Postfix's smtp-sink: accepts every message and throws it away (the ceiling of the protocol work). */
export async function startSmtpSink(port: number): Promise<ChildProcess> {
  const child = spawn(SMTP_SINK, ['-u', 'postfix', '-h', 'sink.bench.test', `127.0.0.1:${port}`, '256'], {
    stdio: 'ignore',
  });
  await waitForGreeting(port);
  return child;
}
