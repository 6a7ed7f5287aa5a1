import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A real kube-apiserver (v1.20.2, built from Debian's source by scripts/build-kube-apiserver.sh)
 * on loopback, with Debian's etcd, a static token file and a self-signed serving certificate made
 * with openssl. No controller-manager, scheduler or kubelet: objects are stored, validated,
 * watched and admitted for real, but nothing runs (no pods, no garbage collection).
 */
export const KUBE_APISERVER =
  process.env.MBX_KUBE_APISERVER ?? path.join(process.env.MBX_K8S_CACHE ?? '/var/cache/mbx-k8s', 'bin/kube-apiserver');
export const ETCD = process.env.MBX_ETCD ?? '/usr/bin/etcd';
export const TOKEN = 'mbx-test-admin-token';

export function realApiServerAvailable(): { ok: true } | { ok: false; why: string } {
  if (!existsSync(KUBE_APISERVER))
    return {
      ok: false,
      why: `${KUBE_APISERVER} is missing (build it with scripts/build-kube-apiserver.sh, about 10 minutes)`,
    };
  if (!existsSync(ETCD)) return { ok: false, why: `${ETCD} is missing (apt-get install etcd-server)` };
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch {
    return { ok: false, why: 'openssl is missing' };
  }
  return { ok: true };
}

export interface RunningApiServer {
  url: string;
  kubeconfigPath: string;
  dir: string;
  /** Stops and starts kube-apiserver again on the same port and etcd: every watch connection breaks. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export async function startRealApiServer(): Promise<RunningApiServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'mbx-k8s-'));
  const [etcdPort, etcdPeerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const file = (name: string) => path.join(dir, name);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      file('tls.key'),
      '-out',
      file('tls.crt'),
      '-days',
      '7',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  execFileSync('openssl', ['genrsa', '-out', file('sa.key'), '2048'], { stdio: 'ignore' });
  writeFileSync(file('tokens.csv'), `${TOKEN},mbx-test-admin,mbx-test-admin,system:masters\n`);

  const etcd = await startProcess(
    ETCD,
    [
      `--data-dir=${file('etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeerPort}`,
      '--log-level=error',
      '--quota-backend-bytes=268435456',
    ],
    file('etcd.log'),
  );
  const apiArgs = [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    '--insecure-port=0',
    `--tls-cert-file=${file('tls.crt')}`,
    `--tls-private-key-file=${file('tls.key')}`,
    `--cert-dir=${file('certs')}`,
    `--token-auth-file=${file('tokens.csv')}`,
    '--authorization-mode=RBAC',
    // 1.20 refuses to start without service-account issuance settings.
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${file('sa.key')}`,
    `--service-account-signing-key-file=${file('sa.key')}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--enable-priority-and-fairness=false',
    '--profiling=false',
    '--v=0',
  ];
  let api: ChildProcess = await startProcess(KUBE_APISERVER, apiArgs, file('apiserver.log'));
  const url = `https://127.0.0.1:${apiPort}`;
  const caPem = readFileSync(file('tls.crt'));
  const ca = caPem.toString('base64');
  const kubeconfigPath = file('kubeconfig');
  writeFileSync(
    kubeconfigPath,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: mbx-test',
      'clusters:',
      `- name: mbx-test`,
      `  cluster: { server: "${url}", certificate-authority-data: "${ca}" }`,
      'users:',
      `- name: mbx-test-admin`,
      `  user: { token: "${TOKEN}" }`,
      'contexts:',
      `- name: mbx-test`,
      `  context: { cluster: mbx-test, user: mbx-test-admin, namespace: default }`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  await waitReady(url, api, file('apiserver.log'), caPem);

  return {
    url,
    kubeconfigPath,
    dir,
    async restart() {
      await stopProcess(api);
      api = await startProcess(KUBE_APISERVER, apiArgs, file('apiserver.log'));
      await waitReady(url, api, file('apiserver.log'), caPem);
    },
    async stop() {
      await stopProcess(api);
      await stopProcess(etcd);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Children still running; killed when this process exits however it exits (no orphaned etcd). */
const running = new Set<ChildProcess>();
process.once('exit', () => running.forEach((child) => child.kill('SIGKILL')));

async function startProcess(bin: string, args: string[], logFile: string): Promise<ChildProcess> {
  const out = openSync(logFile, 'a');
  const child = spawn(bin, args, { stdio: ['ignore', out, out] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** /readyz answers "ok" once every post-start hook ran (CRD handling, RBAC bootstrap roles …). */
async function waitReady(url: string, child: ChildProcess, logFile: string, ca: Buffer): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`kube-apiserver exited with ${child.exitCode}: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
    const body = await new Promise<string | null>((resolve) => {
      const req = https.get(
        `${url}/readyz`,
        { ca, headers: { authorization: `Bearer ${TOKEN}` }, timeout: 2000 },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => {
            text += d.toString();
          });
          res.on('end', () => resolve(res.statusCode === 200 ? text : null));
        },
      );
      req.on('error', () => resolve(null));
      req.on('timeout', () => req.destroy());
    });
    if (body === 'ok') return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`kube-apiserver was not ready within 90 s: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
}
