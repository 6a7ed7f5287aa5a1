import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { KoaInstrumentation } from '@opentelemetry/instrumentation-koa';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';

/** Probes and scrapes would be most of the spans and say nothing. */
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The library instrumentations: incoming and outgoing HTTP, Koa middleware and routes, pg
 * queries, ioredis commands. They patch modules as those load, so they must be registered before
 * pg, koa or ioredis is imported: see preload.ts.
 */
export function autoInstrumentations() {
  return [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => QUIET_PATHS.has((req.url ?? '').split('?')[0] ?? ''),
    }),
    new KoaInstrumentation(),
    // Defaults on purpose: addSqlCommenterCommentToQueries would replace a query object by a plain
    // copy, and a pipelined batch (src/storage/statement-pipeline.ts) is a Submittable whose methods
    // must survive; enableTraceContextPropagation would add a round trip before every query.
    new PgInstrumentation(),
    new IORedisInstrumentation(),
  ];
}
