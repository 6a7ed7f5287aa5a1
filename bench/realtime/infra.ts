import type { ChildProcess } from 'node:child_process';
import { IpcChild, script, startProcess } from '../lib/processes.js';
import type { ClientSpec, FromClient, ToClient } from './clients.js';

export function ceiling(port: number, env: Record<string, string> = {}): Promise<ChildProcess> {
  return startProcess(
    [...script('bench/realtime/ceiling-server'), String(port)],
    env,
    `http://127.0.0.1:${port}/healthz`,
  );
}

/** A forked client process holding its share of the connections. */
export class ClientProcess {
  private readonly ipc = new IpcChild<ToClient, FromClient>('bench/realtime/clients');

  static start(): ClientProcess {
    return new ClientProcess();
  }

  connect(specs: ClientSpec[], concurrency = 100) {
    return this.ipc.ask<{ ready: number; failed: number; firstError: string | null }>({
      cmd: 'connect',
      specs,
      concurrency,
    });
  }

  async collect(): Promise<Array<[number, number, number]>> {
    return (await this.ipc.ask<{ records: Array<[number, number, number]> }>({ cmd: 'collect' })).records;
  }

  close(): void {
    this.ipc.close({ cmd: 'close' });
  }
}
