import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { sendBody, twoMailboxes } from '../delivery/helpers.js';
import { appendEvent } from '../../src/core/state/events/event-log.js';

// GET /metrics on a real server: request rate and latency per route template, and the gauges
// read from the database at scrape time (outbox queue depth and age, event-log lag).

let api: TestServer;
beforeAll(async () => {
  api = await startTestServer({ roles: ['api'] });
}); // no worker: jobs stay queued
afterAll(async () => {
  await api?.close();
});

const scrape = async (server: TestServer) => {
  const res = await fetch(`${server.url}/metrics`);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return res.text();
};
const value = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('Prometheus metrics', () => {
  it('counts requests and observes latency per route template, never per id', async () => {
    const { a, b } = await twoMailboxes(api);
    const sent = await api.api(a.token).post('/api/messages/send', sendBody(b.address));
    await api.api(a.token).get(`/api/messages/${sent.body.data.messageId}`);
    await api.api(a.token).get('/api/messages/msg_does_not_exist');
    await api.api().get('/no/such/route');
    const text = await scrape(api);
    expect(value(text, 'mailbox_http_requests_total{route="/api/messages/send",method="POST",status="202"}')).toBe(1);
    expect(value(text, 'mailbox_http_requests_total{route="/api/messages/:messageId",method="GET",status="200"}')).toBe(
      1,
    );
    expect(value(text, 'mailbox_http_requests_total{route="/api/messages/:messageId",method="GET",status="404"}')).toBe(
      1,
    );
    expect(
      value(text, 'mailbox_http_requests_total{route="unmatched",method="GET",status="404"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(value(text, 'mailbox_http_request_duration_seconds_count{route="/api/messages/send",method="POST"}')).toBe(
      1,
    );
    expect(text).not.toContain(sent.body.data.messageId);
  });

  it('reports the outbox queue depth and the age of its oldest job', async () => {
    const { a, b } = await twoMailboxes(api);
    await api.api(a.token).post('/api/messages/send', sendBody(b.address));
    const text = await scrape(api);
    expect(value(text, 'mailbox_outbox_queue_depth{state="due"}')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'mailbox_outbox_queue_depth{state="scheduled"}')).toBe(0);
    expect(value(text, 'mailbox_outbox_queue_oldest_age_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('reports event-log lag: logged events this process never heard announced', async () => {
    expect(value(await scrape(api), 'mailbox_event_log_lag_seconds')).toBe(0);
    const { a } = await twoMailboxes(api);
    const services = api.runtime.services;
    // Logged 30 s after the newest announced event, and never published on the bus.
    await services.db.tx((trx) => appendEvent(trx, a.mailboxId, 'message.deleted', {}, new Date(Date.now() + 30_000)));
    expect(value(await scrape(api), 'mailbox_event_log_lag_seconds')).toBeGreaterThanOrEqual(29);
  });
});

describe('health and metrics of smtp- and worker-only processes', () => {
  it('a worker process with HEALTH_SERVER=true serves /healthz, /readyz and /metrics on PORT, and no API', async () => {
    const worker = await startTestServer({ roles: ['worker'], env: { HEALTH_SERVER: 'true' } });
    try {
      expect((await fetch(`${worker.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${worker.url}/readyz`)).status).toBe(200);
      expect(await scrape(worker)).toContain('mailbox_outbox_queue_depth');
      expect((await fetch(`${worker.url}/api/openapi.json`)).status).toBe(200); // the document, not the routes
      expect((await fetch(`${worker.url}/api/messages`)).status).toBe(404);
    } finally {
      await worker.close();
    }
  });

  it('without HEALTH_SERVER a worker process opens no HTTP port', async () => {
    const worker = await startTestServer({ roles: ['worker'] });
    try {
      expect(worker.runtime.httpPort).toBeNull();
    } finally {
      await worker.close();
    }
  });
});
