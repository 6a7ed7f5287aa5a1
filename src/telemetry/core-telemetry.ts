import type { Observability } from '../core/base/observability.js';
import { deliveryOutcomes } from './metric-registry.js';
import { currentTraceparent, withConsumerSpan } from './tracing.js';

/** The core's observability port (core/observability.ts) on OpenTelemetry and Prometheus. */
export const coreTelemetry: Observability = {
  currentTraceparent,
  inConsumerSpan: withConsumerSpan,
  deliveryOutcome(route, result, count = 1) {
    deliveryOutcomes.inc({ route, result }, count);
  },
};
