import { startTestServer, type TestServer } from '../support/harness.js';
import { OutboxWorker } from '../../src/core/flows/outbound/outbox-worker.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';

/** The API (and SMTP) without the worker role: tests drive their own workers with short backoff. */
export function startTransportServer(env: Record<string, string>): Promise<TestServer> {
  return startTestServer({
    roles: ['api', 'smtp'],
    env: {
      SMTP_SUBMISSION_PORT: '0',
      SMTP_MX_PORT: '0',
      SMTP_HOSTNAME: 'mail.test',
      SEND_RATE_LIMIT_PER_MINUTE: '100000',
      ...env,
    },
  });
}

export function fastWorker(
  server: TestServer,
  workerId = 'test-worker',
  leaseMs = 30_000,
  concurrency = 1,
): OutboxWorker {
  return new OutboxWorker(server.runtime.services, {
    pollIntervalMs: 20,
    leaseMs,
    workerId,
    concurrency,
    retry: { baseMs: 100, maxMs: 400 },
  });
}

/** Runs a worker until `done` holds, then stops it. */
export async function runWorkerUntil<T>(
  server: TestServer,
  done: () => Promise<T | undefined | null | false>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const worker = fastWorker(server);
  worker.start();
  try {
    return await waitFor(done, timeoutMs, what);
  } finally {
    await worker.stop();
  }
}

export const recipientsOfMessage = (server: TestServer, messageId: string) =>
  rowsOf(
    () => server,
  )`select address, status, remote_reply, attempts from message_recipient where message_id = ${messageId} order by address`;
