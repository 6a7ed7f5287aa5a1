import type { Context, Next } from 'koa';
import type { Logger } from '../../core/base/logger.js';

/**
 * One `http.request` line per request, outermost so it sees the final status the envelope chose:
 * method, route (the router's pattern, so ids and query strings, where a careless client may put a
 * token, never reach the log), status, duration in ms and the request's `tid`, read back from the
 * `traceparent` response header because the request's span has ended by then. Probes (/healthz,
 * /readyz, /metrics) and the console's static files log at debug: they would drown the rest.
 */
export function accessLog(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const route = typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : null;
      const tid = /^00-([0-9a-f]{32})-/.exec(ctx.response.get('traceparent'))?.[1];
      const fields = {
        method: ctx.method,
        route: route ?? (ctx.path.startsWith('/api/') || ctx.path === '/mcp' ? 'unmatched' : ctx.path.slice(0, 120)),
        status: ctx.status,
        ms: Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100,
        ...(tid ? { tid } : {}),
      };
      const quiet = route === null ? !ctx.path.startsWith('/api/') : /^\/(healthz|readyz|metrics)$/.test(route);
      (quiet ? log.debug : log.info)('http.request', fields);
    }
  };
}
