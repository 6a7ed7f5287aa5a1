/**
 * `node --import ./dist/src/telemetry/preload.js dist/src/cli.js …` (npm start and the image's
 * entrypoint do this). Library instrumentation works by patching pg, koa, ioredis and http as
 * they load, and the CLI's static imports load them before any of its code runs, so the SDK
 * has to start in a preload. `register` adds import-in-the-middle's ESM loader hook: without it
 * only CommonJS loads are seen (pg and http were, koa's ESM entry was not).
 *
 * Only when spans are exported (OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT): otherwise
 * library spans would be made and dropped on every query, and `tid` needs only our own spans,
 * which work without this file.
 */
import { register } from 'node:module';
import { startTracing, tracesExportRequested } from './tracing.js';

if (tracesExportRequested()) {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const { autoInstrumentations } = await import('./auto-instrumentations.js');
  await startTracing(process.env, { instrumentations: autoInstrumentations() });
}
