import type { Services } from '../../core/services.js';

/** Starts the SMTP listeners (submission on 587, inbound MX on 25). (Being built.) */
export async function startSmtpServers(_services: Services): Promise<{ ports: { submission: number | null; mx: number | null }; close(): Promise<void> }> {
  return { ports: { submission: null, mx: null }, close: async () => undefined };
}
