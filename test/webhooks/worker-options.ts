import type { WebhookWorkerOptions } from '../../src/core/flows/webhooks/webhook-worker.js';

/**
 * Options of a WebhookWorker a test starts itself on a test server's services: short retries,
 * receivers on loopback allowed, nothing disabled during a test; `o` sets what the test is about.
 */
export function testWebhookWorkerOptions(
  o: Partial<WebhookWorkerOptions> & { workerId: string },
): WebhookWorkerOptions {
  return {
    pollIntervalMs: 50,
    leaseMs: 30_000,
    timeoutMs: 5_000,
    connectTimeoutMs: 5_000,
    inFlightPerDomain: 4,
    retry: { baseMs: 100, maxMs: 400 },
    disableAfterMs: 3_600_000,
    concurrency: 2,
    policy: { allowPrivate: true },
    ...o,
  };
}
