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
import { NodeSDK } from '@opentelemetry/sdk-node';
import { NoopSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';

let sdk: NodeSDK | undefined;

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
 * request gets a real W3C trace id for `tid`; spans are exported only when the standard
 * OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT variables ask for it (off by default).
 */
export function startTracing(
  env: Record<string, string | undefined> = process.env,
  options: TracingOptions = {},
): void {
  if (sdk) return;
  const processors = options.spanProcessors ?? (tracesExportRequested(env) ? undefined : [new NoopSpanProcessor()]);
  sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? 'mailbox-service',
    ...(processors ? { spanProcessors: processors } : {}),
    instrumentations: options.instrumentations ?? [],
  });
  sdk.start();
}

export async function stopTracing(): Promise<void> {
  await sdk?.shutdown().catch(() => undefined);
  sdk = undefined;
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
