import type { Logger } from '../../base/logger.js';
import type { Clock } from '../../base/time.js';
import type { ApprovalService } from './approval.service.js';
import type { AuditStore } from '../../state/audit/audit.store.js';

/** Once a minute: APPROVAL_TTL is hours, audit retention days. */
export const POLICY_SWEEP_INTERVAL_MS = 60_000;

/**
 * The worker's policy housekeeping: held messages past APPROVAL_TTL expire as rejected, and audit
 * entries older than EVENT_RETENTION are removed (docs/api.md, "Audit trail"). Several workers
 * sweeping at once is harmless: expiry is a conditional update with SKIP LOCKED, pruning idempotent.
 */
export function startPolicySweeper(
  approvals: ApprovalService,
  audit: AuditStore,
  clock: Clock,
  log: Logger,
  options: { auditRetentionMs: number; intervalMs?: number },
): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const sweep = async () => {
    let expired = 0;
    for (let n = await approvals.expireDue(); n > 0; n = await approvals.expireDue()) expired += n;
    const pruned = await audit.prune(new Date(clock.now().getTime() - options.auditRetentionMs));
    if (expired + pruned > 0) log.info('policy.swept', { expired, auditPruned: pruned });
  };
  const tick = () => {
    if (running) return;
    running = sweep()
      .catch((err) => log.warn('policy.sweep_failed', { err }))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, options.intervalMs ?? POLICY_SWEEP_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
