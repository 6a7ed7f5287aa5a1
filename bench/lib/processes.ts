import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

// Processes of the benchmarks and the soak. Compiled (`make bench`, `make soak`: dist/…/*.js) they
// run the built server; from source (`node --import tsx bench/…/run.ts`) they run src/ under tsx.
const here = path.dirname(fileURLToPath(import.meta.url));
const compiled = import.meta.url.endsWith('.js');
const root = path.resolve(here, compiled ? '../../..' : '../..');

/** Node arguments that run `rel` (a path from the repository root, no extension) built or from source. */
export const script = (rel: string): string[] =>
  compiled ? [path.join(root, 'dist', `${rel}.js`)] : ['--import', 'tsx', path.join(root, `${rel}.ts`)];

export interface StartOptions {
  /** Each stdout line of the child (its JSON log); without it stdout is discarded. */
  onStdout?: (line: string) => void;
}

/** Starts a child node process and resolves once `url` answers (or rejects after 60 s). */
export async function startProcess(
  args: string[],
  env: Record<string, string>,
  readyUrl: string,
  opts: StartOptions = {},
): Promise<ChildProcess> {
  // BENCH_CPU_PROF_DIR=dir: each process started here (service roles, bare stacks; not the sinks or
  // Postfix) writes a V8 CPU profile there when stopped with SIGTERM (stopProcess below).
  const profile = process.env.BENCH_CPU_PROF_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`]
    : [];
  const child = spawn(process.execPath, [...profile, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', opts.onStdout ? 'pipe' : 'ignore', 'inherit'],
  });
  if (opts.onStdout) createInterface({ input: child.stdout! }).on('line', opts.onStdout);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
    try {
      const res = await fetch(readyUrl);
      if (res.ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`${args.join(' ')} did not become ready`);
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

/** `mailbox serve --roles …` with PORT=`port`; resolves when /healthz answers. */
export function serve(
  roles: string,
  port: number,
  env: Record<string, string>,
  opts: StartOptions = {},
): Promise<ChildProcess> {
  return startProcess(
    [...script('src/cli'), 'serve', '--roles', roles],
    { ...env, PORT: String(port) },
    `http://127.0.0.1:${port}/healthz`,
    opts,
  );
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A private redis-server, so a benchmark shares nothing with tests running beside it. */
export async function redisServer(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const { Redis } = await import('ioredis');
  for (let i = 0; i < 100; i++) {
    const r = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => undefined);
    const ok = await r.connect().then(
      () => r.ping(),
      () => null,
    );
    r.disconnect();
    if (ok === 'PONG') return child;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('redis-server did not start');
}

/**
 * A forked helper process (IPC) answering one message per request, in order: the benchmarks'
 * socket.io-client processes, which keep thousands of sockets off the driver's event loop.
 */
export class IpcChild<Request, Reply> {
  readonly child: ChildProcess;

  constructor(rel: string) {
    const args = script(rel);
    this.child = fork(args.at(-1)!, [], {
      execArgv: args.slice(0, -1),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
  }

  ask<T extends Reply>(message: Request): Promise<T> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) =>
        reject(new Error(`${this.child.spawnargs.join(' ')} exited with ${code}`));
      this.child.once('exit', onExit);
      this.child.once('message', (m) => {
        this.child.off('exit', onExit);
        resolve(m as T);
      });
      this.child.send(message as object);
    });
  }

  /** Sends the goodbye message when still connected; kills the process 2 s later if it lingers. */
  close(goodbye: Request): void {
    if (this.child.connected) this.child.send(goodbye as object);
    setTimeout(() => this.child.kill('SIGKILL'), 2000).unref();
  }
}
