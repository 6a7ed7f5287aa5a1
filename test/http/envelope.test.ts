import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

const TRACE_ID = /^[0-9a-f]{32}$/;

describe('envelope and tracing', () => {
  it('wraps success with code, msg, null errMsg and a W3C trace id that matches traceparent', async () => {
    const res = await server.api().get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ data: { status: 'ok' }, code: 200, errorCode: null, msg: 'OK', errMsg: null });
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
    expect(res.body).toMatchObject({ data: null, code: 404, errorCode: 'ROUTE_NOT_FOUND', msg: 'Not Found' });
    expect(res.body.errMsg).toContain('/api/nope');
    expect(res.body.tid).toMatch(TRACE_ID);
  });

  it('answers a wrong method with a 405 envelope', async () => {
    const res = await server.api().put('/api/mailboxes', {});
    expect(res.status).toBe(405);
    expect(res.body).toMatchObject({ data: null, code: 405 });
  });

  it('answers a missing token with 401 before reading the body', async () => {
    const res = await server
      .api()
      .raw('/api/mailboxes', { method: 'POST', body: '{bad json', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ data: null, code: 401, errorCode: 'UNAUTHENTICATED' });
  });

  // RFC 9110 §11.6.1: a 401 carries a challenge; RFC 6750 §3.1: no error code without credentials.
  it('sends WWW-Authenticate: Bearer with every 401, invalid_token only when a token was sent', async () => {
    const missing = await server.api().get('/api/messages');
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="mailbox-service"');
    const unknown = await server.api('mbxm_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA000000').get('/api/messages');
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('www-authenticate')).toMatch(
      /^Bearer realm="mailbox-service", error="invalid_token", error_description="[^"]+"$/,
    );
    const login = await server.api().post('/api/mailbox/auth/login/password', {
      mailboxAddress: 'nobody@nowhere.example',
      password: 'wrong-password',
    });
    expect(login.status).toBe(401);
    expect(login.body.errorCode).toBe('LOGIN_FAILED');
    expect(login.headers.get('www-authenticate')).toBe('Bearer realm="mailbox-service"');
    const ok = await server.api().get('/healthz');
    expect(ok.headers.get('www-authenticate')).toBeNull();
  });

  it('answers bad JSON with 400, wrong content type with 415, and oversize with 413, all enveloped', async () => {
    const domain = await server.createDomain();
    const api = server.api(domain.token);
    const bad = await api.raw('/api/mailboxes', {
      method: 'POST',
      body: '{bad json',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ data: null, code: 400, errorCode: 'JSON_INVALID' });
    const text = await api.raw('/api/mailboxes', {
      method: 'POST',
      body: 'address=a',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    expect(text.body).toMatchObject({ data: null, code: 415, errorCode: 'UNSUPPORTED_MEDIA_TYPE' });
    const huge = await api.raw('/api/mailboxes', {
      method: 'POST',
      body: JSON.stringify({ notes: 'x'.repeat(2 * 1024 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ data: null, code: 413, errorCode: 'PAYLOAD_TOO_LARGE' });
    // The refusal states the limit (MAX_JSON_BYTES, 1 MiB by default).
    expect(huge.body.errMsg).toBe(`The request body is too large: the limit is ${1024 * 1024} bytes.`);
  });

  it('names the field and what is wrong: a missing field is required, an unknown key is named', async () => {
    const domain = await server.createDomain();
    const box = await server.createMailbox(domain.token, `words-${Date.now()}@${domain.name}`);
    const api = server.api(box.token);
    const missing = await api.post('/api/messages/send', { subject: 'Hi', bodyText: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ errorCode: 'VALIDATION_FAILED', errMsg: 'toAddress: required' });
    const unknown = await api.post('/api/messages/send', {
      toAddress: ['a@example.com'],
      subject: 'Hi',
      bodyText: 'x',
      surprise: true,
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errMsg).toBe('surprise: unknown key');
    const wrongType = await api.post('/api/messages/send', { toAddress: 42, subject: 'Hi', bodyText: 'x' });
    expect(wrongType.body.errMsg).toMatch(/^toAddress: (?!required)/);
  });

  it('reports readiness of the database', async () => {
    const res = await server.api().get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ ready: true, checks: { database: 'ok' } });
  });
});
