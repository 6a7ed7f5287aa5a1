import { createRequire, register } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { SpanKind } from '@opentelemetry/api';

// What preload.ts does for `npm start`, done here before anything imports pg, koa or ioredis
// (those imports are dynamic below): the ESM loader hook, then the SDK with the library
// instrumentations, spans collected in memory. vitest loads Koa's ESM entry in a way the hook
// does not see, so Koa's CommonJS build is required once: require-in-the-middle patches the Koa
// class, which the ESM entry shares. (preload.test.ts checks the real preload in a plain node.)
register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
const exporter = new InMemorySpanExporter();
const { startTracing, stopTracing } = await import('../../src/telemetry/tracing.js');
const { autoInstrumentations } = await import('../../src/telemetry/auto-instrumentations.js');
await startTracing(
  {},
  { instrumentations: autoInstrumentations(), spanProcessors: [new SimpleSpanProcessor(exporter)] },
);
createRequire(import.meta.url)('koa');
const { ENGINE, startTestServer } = await import('../support/harness.js');
const { sendBody, twoMailboxes, waitFor } = await import('../delivery/helpers.js');
type TestServer = Awaited<ReturnType<typeof startTestServer>>;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ roles: ['api', 'worker'] });
});
afterAll(async () => {
  await server?.close();
  await stopTracing();
});

const scope = (s: ReadableSpan) => s.instrumentationScope.name;
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('one trace from an HTTP send through the outbox to local delivery', () => {
  it('the send request, its library spans and the delivery job share the trace whose id is tid', async () => {
    const { a, b } = await twoMailboxes(server);
    exporter.reset();
    const sent = await server.api(a.token).post('/api/messages/send', sendBody(b.address, { subject: 'Traced' }));
    expect(sent.status).toBe(202);
    const tid = sent.body.tid;
    expect(tid).toMatch(/^[0-9a-f]{32}$/);
    expect(sent.headers.get('traceparent')).toContain(tid);

    const deliver = await waitFor(
      async () =>
        exporter.getFinishedSpans().find((s) => s.name === 'outbox.deliver' && s.spanContext().traceId === tid),
      10_000,
      'the delivery span',
    );
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === tid);
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));

    // The request: instrumentation-http's server span at the root, our envelope span, Koa's spans.
    const httpServer = spans.find(
      (s) => scope(s) === '@opentelemetry/instrumentation-http' && s.kind === SpanKind.SERVER,
    );
    expect(httpServer, 'http server span').toBeDefined();
    expect(parentOf(httpServer!)).toBeUndefined();
    expect(spans.some((s) => s.name === 'POST /api/messages/send')).toBe(true);
    expect(spans.some((s) => scope(s) === '@opentelemetry/instrumentation-koa')).toBe(true);

    // The delivery continues the stored traceparent: its parent is a span of the request.
    expect(deliver.kind).toBe(SpanKind.CONSUMER);
    const deliverParent = byId.get(parentOf(deliver)!);
    expect(deliverParent, "the delivery span's parent is in the request's trace").toBeDefined();

    if (ENGINE === 'postgres') {
      // pg queries of both halves are in the same trace: the send's insert, the delivery's queries.
      const pgSpans = spans.filter((s) => scope(s) === '@opentelemetry/instrumentation-pg');
      const underDelivery = (s: ReadableSpan): boolean => {
        for (let p = parentOf(s); p; p = parentOf(byId.get(p)!)) if (p === deliver.spanContext().spanId) return true;
        return false;
      };
      expect(pgSpans.some(underDelivery)).toBe(true);
      expect(pgSpans.some((s) => !underDelivery(s))).toBe(true);
      // The send's write transaction travels as one pipelined batch (statement-pipeline.ts): one
      // span, ended when the batch is answered, whose text holds the batch's statements.
      const batch = pgSpans.find(
        (s) =>
          !underDelivery(s) &&
          Object.values(s.attributes).some((v) => typeof v === 'string' && v.includes('insert into message (')),
      );
      expect(batch, 'a finished span of the send batch').toBeDefined();
    }

    // Exactly one trace holds this message's delivery.
    const deliveries = exporter
      .getFinishedSpans()
      .filter(
        (s) => s.name === 'outbox.deliver' && s.attributes['mailbox.job_id'] === deliver.attributes['mailbox.job_id'],
      );
    expect(new Set(deliveries.map((s) => s.spanContext().traceId))).toEqual(new Set([tid]));
  });

  it('an incoming traceparent is continued all the way to the delivery', async () => {
    const { a, b } = await twoMailboxes(server);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const sent = await server.api(a.token).post('/api/messages/send', sendBody(b.address, { subject: 'Continued' }), {
      traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
    });
    expect(sent.body.tid).toBe(traceId);
    await waitFor(
      async () =>
        exporter.getFinishedSpans().find((s) => s.name === 'outbox.deliver' && s.spanContext().traceId === traceId),
      10_000,
      'the delivery span',
    );
  });
});
