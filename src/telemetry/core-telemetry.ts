import { context, propagation, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { Observability } from '../core/observability.js';
import { deliveryOutcomes } from './metric-registry.js';
import { currentTraceparent, tracer } from './tracing.js';

/** The core's observability port (core/observability.ts) on OpenTelemetry and Prometheus. */
export const coreTelemetry: Observability = {
  currentTraceparent,

  inConsumerSpan(name, traceparent, attributes, fn) {
    const parent = traceparent ? propagation.extract(context.active(), { traceparent }) : context.active();
    return tracer().startActiveSpan(name, { kind: SpanKind.CONSUMER, attributes }, parent, async (span) => {
      try {
        return await fn();
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw err;
      } finally {
        span.end();
      }
    });
  },

  deliveryOutcome(route, result, count = 1) {
    deliveryOutcomes.inc({ route, result }, count);
  },
};
