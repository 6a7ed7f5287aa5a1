import {
  context,
  propagation,
  trace,
  SpanKind,
  SpanStatusCode,
  type Context,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';
import type { NodeSDK } from '@opentelemetry/sdk-node';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** What startTracing started: the full SDK (export, instrumentation) or only a local provider. */
let running: { shutdown(): Promise<unknown> } | undefined;

export interface TracingOptions {
  /** Library instrumentations (http, koa, pg, ioredis: see auto-instrumentations.ts and preload.ts). */
  instrumentations?: NonNullable<ConstructorParameters<typeof NodeSDK>[0]>['instrumentations'];
  /** Replaces the processors chosen from OTEL_* (tests collect spans in memory). */
  spanProcessors?: SpanProcessor[];
}

/** True when the standard OTEL_* variables ask for spans to be exported. */
export function tracesExportRequested(env: Record<string, string | undefined> = process.env): boolean {
  const exporter = env.OTEL_TRACES_EXPORTER;
  return (exporter !== undefined && exporter !== 'none') || env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined;
}

/**
 * Starts OpenTelemetry once per process. A tracer provider is always registered, so every
 * request gets a real W3C trace id for `tid`. Only when spans leave the process (the standard
 * OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT variables, library instrumentation, or a
 * test's processors) is the full NodeSDK loaded: it brings every exporter (OTLP over three
 * transports, Zipkin, Prometheus) and costs each process tens of MB it would never use
 * (docs/design/memory.md). Otherwise a bare provider with the W3C propagator and an
 * AsyncLocalStorage context does what `tid` and `traceparent` need.
 */
export async function startTracing(
  env: Record<string, string | undefined> = process.env,
  options: TracingOptions = {},
): Promise<void> {
  if (running) return;
  const exporting = tracesExportRequested(env);
  if (!exporting && !options.instrumentations?.length && !options.spanProcessors) {
    const provider = new BasicTracerProvider();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    running = {
      shutdown: async () => {
        await provider.shutdown();
        trace.disable();
        context.disable();
        propagation.disable();
      },
    };
    return;
  }
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? 'mailbox-service',
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
    instrumentations: options.instrumentations ?? [],
  });
  sdk.start();
  running = sdk;
}

export async function stopTracing(): Promise<void> {
  await running?.shutdown().catch(() => undefined);
  running = undefined;
}

export const tracer = () => trace.getTracer('mailbox-service');

/** Runs `fn` in a server span continuing an incoming `traceparent`, if any. */
export function withServerSpan<T>(
  name: string,
  headers: Record<string, unknown>,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return inSpan(name, { kind: SpanKind.SERVER }, propagation.extract(context.active(), headers), fn);
}

/**
 * Runs one queued job in a consumer span that continues `traceparent` (stored with the job when
 * it was queued), so the delivery shares the trace of the request that caused it.
 */
export function withConsumerSpan<T>(
  name: string,
  traceparent: string | null,
  attributes: Record<string, string | number>,
  fn: () => Promise<T>,
): Promise<T> {
  const parent = traceparent ? propagation.extract(context.active(), { traceparent }) : context.active();
  return inSpan(name, { kind: SpanKind.CONSUMER, attributes }, parent, () => fn());
}

/** The active span around `fn`, marked as failed when `fn` throws, ended either way. */
function inSpan<T>(name: string, options: SpanOptions, parent: Context, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, options, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The current trace id (32 hex), or '' outside a span. */
export function currentTraceId(): string {
  const id = trace.getActiveSpan()?.spanContext().traceId;
  return id && id !== '00000000000000000000000000000000' ? id : '';
}

/** W3C traceparent of the active span, for response headers and outbox jobs. */
export function currentTraceparent(): string | null {
  const ctx = trace.getActiveSpan()?.spanContext();
  if (!ctx) return null;
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.traceFlags.toString(16).padStart(2, '0')}`;
}
