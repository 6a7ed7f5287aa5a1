import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';

let server: TestServer;
beforeAll(async () => { server = await startTestServer(); });
afterAll(async () => { await server?.close(); });

const TRACE_ID = /^[0-9a-f]{32}$/;

describe('envelope and tracing', () => {
  it('wraps success with code, msg, null errMsg and a W3C trace id that matches traceparent', async () => {
    const res = await server.api().get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ data: { status: 'ok' }, code: 200, msg: 'OK', errMsg: null });
    expect(res.body.tid).toMatch(TRACE_ID);
    expect(res.headers.get('traceparent')).toContain(`-${res.body.tid}-`);
  });

  it('continues an incoming traceparent', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await server.api().get('/healthz', { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    expect(res.body.tid).toBe(traceId);
  });

  it('answers unknown routes with a 404 envelope', async () => {
    const res = await server.api().get('/api/nope');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ data: null, code: 404, msg: 'Not Found' });
    expect(res.body.errMsg).toContain('/api/nope');
    expect(res.body.tid).toMatch(TRACE_ID);
  });

  it('answers a wrong method with a 405 envelope', async () => {
    const res = await server.api().put('/api/mailboxes', {});
    expect(res.status).toBe(405);
    expect(res.body).toMatchObject({ data: null, code: 405 });
  });

  it('answers a missing token with 401 before reading the body', async () => {
    const res = await server.api().raw('/api/mailboxes', { method: 'POST', body: '{bad json', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ data: null, code: 401 });
  });

  it('answers bad JSON with 400, wrong content type with 415, and oversize with 413, all enveloped', async () => {
    const domain = await server.createDomain();
    const api = server.api(domain.token);
    const bad = await api.raw('/api/mailboxes', { method: 'POST', body: '{bad json', headers: { 'content-type': 'application/json' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ data: null, code: 400 });
    const text = await api.raw('/api/mailboxes', { method: 'POST', body: 'address=a', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(text.body).toMatchObject({ data: null, code: 415 });
    const huge = await api.raw('/api/mailboxes', { method: 'POST', body: JSON.stringify({ notes: 'x'.repeat(2 * 1024 * 1024) }), headers: { 'content-type': 'application/json' } });
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ data: null, code: 413 });
  });

  it('reports readiness of the database', async () => {
    const res = await server.api().get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ ready: true, checks: { database: 'ok' } });
  });
});
