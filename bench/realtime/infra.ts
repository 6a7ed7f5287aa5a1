import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startProcess } from '../lib/processes.js';
import type { ClientSpec, FromClient, ToClient } from './clients.js';

// Processes of the realtime benchmark. Compiled (`make bench`: dist/…/*.js) it runs the built
// server; from source (`node --import tsx bench/realtime/run.ts`) it runs src/ under tsx.
const here = path.dirname(fileURLToPath(import.meta.url));
const compiled = import.meta.url.endsWith('.js');
const root = path.resolve(here, compiled ? '../../..' : '../..');
const script = (rel: string): string[] => (compiled ? [path.join(root, 'dist', `${rel}.js`)] : ['--import', 'tsx', path.join(root, `${rel}.ts`)]);

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

/** `mailbox serve --roles …` on `port`; resolves when /healthz answers. */
export function serve(roles: string, port: number, env: Record<string, string>): Promise<ChildProcess> {
  return startProcess([...script('src/cli'), 'serve', '--roles', roles], { ...env, PORT: String(port) }, `http://127.0.0.1:${port}/healthz`);
}

export function ceiling(port: number): Promise<ChildProcess> {
  return startProcess([...script('bench/realtime/ceiling-server'), String(port)], {}, `http://127.0.0.1:${port}/healthz`);
}

/** A private redis-server, so the benchmark shares nothing with tests running beside it. */
export async function redisServer(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const { Redis } = await import('ioredis');
  for (let i = 0; i < 100; i++) {
    const r = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => undefined);
    const ok = await r.connect().then(() => r.ping(), () => null);
    r.disconnect();
    if (ok === 'PONG') return child;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('redis-server did not start');
}

/** A forked client process holding its share of the connections. */
export class ClientProcess {
  private readonly child: ChildProcess;
  private constructor() {
    this.child = fork(script('bench/realtime/clients').at(-1)!, [], { execArgv: compiled ? [] : ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  }

  static start(): ClientProcess {
    return new ClientProcess();
  }

  private ask<T extends FromClient>(message: ToClient): Promise<T> {
    return new Promise((resolve, reject) => {
      this.child.once('message', (m) => resolve(m as T));
      this.child.once('exit', (code) => reject(new Error(`client process exited with ${code}`)));
      this.child.send(message);
    });
  }

  connect(specs: ClientSpec[], concurrency = 100) {
    return this.ask<{ ready: number; failed: number; firstError: string | null }>({ cmd: 'connect', specs, concurrency });
  }

  async collect(): Promise<Array<[number, number, number]>> {
    return (await this.ask<{ records: Array<[number, number, number]> }>({ cmd: 'collect' })).records;
  }

  close(): void {
    if (this.child.connected) this.child.send({ cmd: 'close' } satisfies ToClient);
    setTimeout(() => this.child.kill('SIGKILL'), 2000).unref();
  }
}
