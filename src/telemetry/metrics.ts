import type Koa from 'koa';
import type { Services } from '../core/services.js';

/** Prometheus metrics: the /metrics route and request instrumentation. (Being built.) */
export function createMetrics(_services: Services): { middleware: Koa.Middleware; render(): Promise<string> } {
  return { middleware: async (_ctx, next) => next(), render: async () => '' };
}
