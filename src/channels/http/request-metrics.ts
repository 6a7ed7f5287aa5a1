import type Koa from 'koa';
import { toAppError } from '../../core/base/error-mapping.js';
import { httpDuration, httpRequests } from '../../telemetry/metric-registry.js';

/** Bounded label values: a client cannot grow the series count with made-up methods or paths. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Request count and latency per route template (the router's pattern, `unmatched` otherwise, so
 * ids in paths never become labels), in the Prometheus registry of src/telemetry.
 */
export const requestMetrics: Koa.Middleware = async (ctx, next) => {
  const started = process.hrtime.bigint();
  let status: number | undefined;
  try {
    await next();
  } catch (err) {
    // The envelope (outside) turns this into the response; record the status it will send.
    status = toAppError(err).status;
    throw err;
  } finally {
    const route = typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : 'unmatched';
    const method = METHODS.has(ctx.method) ? ctx.method : 'OTHER';
    httpRequests.inc({ route, method, status: String(status ?? ctx.status) });
    httpDuration.observe({ route, method }, Number(process.hrtime.bigint() - started) / 1e9);
  }
};
