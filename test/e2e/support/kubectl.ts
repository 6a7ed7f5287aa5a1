import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

// The cluster as a user reaches it: the `kubectl` and `helm` command lines with $KUBECONFIG, nothing
// else (no client library of our own), so every step here can be pasted into a terminal.

export const ROOT = path.resolve(import.meta.dirname, '../../..');
const KUBECTL = process.env.KUBECTL ?? 'kubectl';
const HELM = process.env.HELM ?? path.join(ROOT, 'node_modules/.bin/helm');

export interface Run {
  ok: boolean;
  stdout: string;
  stderr: string;
}

async function run(bin: string, args: string[], input?: string, timeoutMs = 120_000): Promise<Run> {
  const child = promisify(execFile)(bin, args, { maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs });
  if (input !== undefined) {
    child.child.stdin!.end(input);
  }
  try {
    const { stdout, stderr } = await child;
    return { ok: true, stdout, stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, stdout: e.stdout ?? '', stderr: e.stderr || e.message };
  }
}

/** `kubectl ARGS`; throws with stderr unless `allowFail`. */
export async function kubectl(args: string[], opts: { input?: string; allowFail?: boolean; timeoutMs?: number } = {}) {
  const res = await run(KUBECTL, args, opts.input, opts.timeoutMs);
  if (!res.ok && !opts.allowFail) throw new Error(`kubectl ${args.join(' ')}: ${res.stderr.trim()}`);
  return res;
}

/** `kubectl ... -o json`, parsed. */
export async function kubectlJson<T = any>(args: string[]): Promise<T> {
  return JSON.parse((await kubectl([...args, '-o', 'json'])).stdout) as T;
}

/** `kubectl apply -f -` of objects (JSON is YAML). */
export async function apply(namespace: string, objects: object[]): Promise<void> {
  const list = { apiVersion: 'v1', kind: 'List', items: objects };
  await kubectl(['-n', namespace, 'apply', '-f', '-'], { input: JSON.stringify(list) });
}

export async function helm(args: string[], timeoutMs = 600_000): Promise<Run> {
  return run(HELM, args, undefined, timeoutMs);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value other than undefined/false, or throws after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs: number,
  everyMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(everyMs);
  }
}

export interface Pod {
  name: string;
  ip: string;
  ready: boolean;
  restarts: number;
  deleting: boolean;
  node: string;
}

/** The pods of one chart component (label app.kubernetes.io/component). */
export async function podsOf(namespace: string, selector: string): Promise<Pod[]> {
  const list = await kubectlJson(['-n', namespace, 'get', 'pods', '-l', selector]);
  return list.items.map((p: any) => ({
    name: p.metadata.name,
    ip: p.status.podIP ?? '',
    ready: (p.status.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'),
    restarts: (p.status.containerStatuses ?? []).reduce((n: number, c: any) => n + c.restartCount, 0),
    deleting: Boolean(p.metadata.deletionTimestamp),
    node: p.spec.nodeName ?? '',
  }));
}

/** A running `kubectl port-forward` to one pod or Service, on a free local port. */
export interface Forward {
  port: number;
  stop(): void;
}

export async function portForward(namespace: string, target: string, remotePort: number): Promise<Forward> {
  const child: ChildProcess = spawn(KUBECTL, ['-n', namespace, 'port-forward', target, `:${remotePort}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`port-forward ${target}: no port after 20 s: ${out}`)), 20_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`port-forward ${target} exited ${code}: ${out}`)));
  });
  return { port, stop: () => child.kill() };
}
