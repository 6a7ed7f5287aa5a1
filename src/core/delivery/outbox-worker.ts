import type { Services } from '../services.js';

/** Claims due outbox jobs and delivers them. (Being built.) */
export class OutboxWorker {
  constructor(protected readonly services: Services, protected readonly options: { pollIntervalMs: number; leaseMs: number; workerId: string }) {}
  start(): void {}
  async stop(): Promise<void> {}
}
