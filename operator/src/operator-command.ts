import type { Config } from '../../src/config/config.js';
import { stopTracing } from '../../src/telemetry/tracing.js';
import { startOperator } from './operator.js';

/**
 * `mailbox operator`: runs until SIGTERM/SIGINT, then stops reconciling (the reconcile in flight
 * finishes), releases the Lease so a standby replica takes over at once, and exits 0.
 */
export async function runOperatorCommand(config: Readonly<Config>): Promise<void> {
  const operator = await startOperator(config);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    operator.runtime.services.log.info('shutdown', { signal });
    await operator.close();
    await stopTracing();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
