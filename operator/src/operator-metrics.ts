import { Counter, Gauge } from 'prom-client';
import { registry } from '../../src/telemetry/metric-registry.js';

/**
 * The operator's own metrics, on the service's one registry (GET /metrics on OPERATOR_PORT).
 * Module singletons: prom-client refuses a second metric of the same name in a registry.
 */
export const operatorMetrics = {
  leader: new Gauge({
    name: 'mailbox_operator_leader',
    help: '1 while this replica holds the leader Lease',
    registers: [registry],
  }),
  reconciles: new Counter({
    name: 'mailbox_operator_reconciles_total',
    help: 'Reconciles by kind and outcome (created, updated, unchanged, deleted, failed)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  }),
  conflicts: new Counter({
    name: 'mailbox_operator_api_conflicts_total',
    help: 'HTTP 409 answers from the API server, retried with a fresh read',
    labelNames: ['operation'] as const,
    registers: [registry],
  }),
  watchRestarts: new Counter({
    name: 'mailbox_operator_watch_restarts_total',
    help: 'List/watch restarts after an error, by resource',
    labelNames: ['resource'] as const,
    registers: [registry],
  }),
  relists: new Counter({
    name: 'mailbox_operator_relists_total',
    help: 'Full lists by the informers (start, 410 Gone, restarts), by resource',
    labelNames: ['resource'] as const,
    registers: [registry],
  }),
};
