import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { startTestServer, type TestServer } from '../support/harness.js';
import { seedMessage } from '../support/tenants.js';
import { rawHttp, requestBytes, type RawResponse } from '../reliability/support/raw-http.js';
import { call, mcpClient, textOf } from '../mcp/helpers.js';

// Regressions of the 500s and bare refusals the fuzzer (test/reliability/fuzz.test.ts) found:
// a NUL in any text input, a compressed or corrupt request body, requests Node's HTTP parser
// refuses, and tools/call params that are not an object. Each is now a 4xx in the envelope.

let server: TestServer;
let port: number;
let d: { domainId: string; name: string; token: string };
let m: { mailboxId: string; address: string; token: string; tokenId: string };

beforeAll(async () => {
  server = await startTestServer();
  port = Number(new URL(server.url).port);
  d = await server.createDomain();
  m = await server.createMailbox(d.token, `hostile@${d.name}`);
});
afterAll(async () => {
  await server?.close();
});

function envelopeOf(res: RawResponse | { error: string }, status: number) {
  if ('error' in res) throw new Error(res.error);
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(res.body.toString('utf8'));
  expect(body).toMatchObject({ code: status, data: null, msg: expect.any(String), errMsg: expect.any(String) });
  expect(body.tid).toMatch(/^[0-9a-f]{32}$/);
  return body;
}

const auth = (token: string): [string, string] => ['Authorization', `Bearer ${token}`];

describe('hostile input: NUL in text', () => {
  it('refuses a NUL in a path id, a query value and a JSON field with 400 naming the field, not a 500', async () => {
    const msg = await seedMessage(server, { mailboxId: m.mailboxId, address: m.address });
    const api = server.api(m.token);
    for (const path of [
      `/api/messages/msg_%00`,
      `/api/messages/msg_%00/raw`,
      `/api/threads/${msg.threadId}%00`,
      `/api/mailbox/access-tokens/tok_%00/reveal`,
    ]) {
      const res = path.endsWith('reveal') ? await api.post(path) : await api.get(path);
      expect(res.status, path).toBe(400);
      expect(res.body.errMsg, path).toMatch(/must not contain NUL/);
    }
    const send = await api.post('/api/messages/send', {
      toAddress: 'x@remote.example',
      subject: 'a\u0000b',
      bodyText: 'hi',
    });
    expect(send.status).toBe(400);
    expect(send.body.errMsg).toBe('subject: must not contain NUL characters');
    const created = await server
      .api(d.token)
      .post('/api/mailboxes', { address: `nul@${d.name}`, displayName: 'N\u0000' });
    expect(created.status).toBe(400);
    expect(created.body.errMsg).toBe('displayName: must not contain NUL characters');
    const token = await api.post('/api/mailbox/access-tokens', { tokenName: '\u0000', scopes: ['MailboxRead'] });
    expect(token.status).toBe(400);
    const waited = await api.get('/api/messages/wait?timeoutMs=0&subjectContains=%00x');
    expect(waited.status).toBe(400);
  });

  it('refuses an unpaired surrogate (a \\ud800 escape) with 400, which jsonb event payloads cannot store', async () => {
    const api = server.api(m.token);
    const body = '{"toAddress":"x@remote.example","subject":"\\ud800","bodyText":"hi"}';
    const send = await api.raw('/api/messages/send', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(send.status).toBe(400);
    expect(send.body.errMsg).toBe('subject: must be well-formed Unicode (no unpaired surrogates)');
    // A well-formed pair is text like any other.
    expect(
      (await api.post('/api/messages/send', { toAddress: 'x@remote.example', subject: 'pair 🎉', bodyText: 'hi' }))
        .status,
    ).toBe(202);
  });

  it('refuses a NUL in MCP tool arguments with a 400 tool error', async () => {
    const client = await mcpClient(server, m.token);
    try {
      const result = await call(client, 'send_mail', {
        toAddress: 'x@remote.example',
        subject: 'a\u0000b',
        bodyText: 'hi',
      });
      expect(result.isError).toBe(true);
      expect(JSON.parse(textOf(result))).toEqual({
        code: 400,
        errorCode: 'TEXT_INVALID',
        errMsg: 'subject: must not contain NUL characters',
      });
    } finally {
      await client.close();
    }
  });
});

describe('hostile input: request bodies', () => {
  it('answers a compressed or corrupt-compressed body with 415, on JSON routes and the upload form', async () => {
    const json = Buffer.from(JSON.stringify({ tokenName: 'gz', scopes: ['MailboxRead'] }));
    for (const [coding, body] of [
      ['gzip', gzipSync(json)],
      ['gzip', json],
      ['br', json],
      ['deflate', Buffer.from('nope')],
      ['bogus', json],
    ] as const) {
      const res = await rawHttp(port, {
        method: 'POST',
        target: '/api/mailbox/access-tokens',
        headers: [auth(m.token), ['Content-Type', 'application/json'], ['Content-Encoding', coding]],
        body,
      });
      expect(envelopeOf(res, 415).errMsg, coding).toMatch(/Content-Encoding/);
    }
    const form = await rawHttp(port, {
      method: 'POST',
      target: '/api/messages/attachments',
      headers: [auth(m.token), ['Content-Type', 'multipart/form-data; boundary=b'], ['Content-Encoding', 'gzip']],
      body: Buffer.from('--b--\r\n'),
    });
    envelopeOf(form, 415);
    // identity is no coding at all
    const plain = await rawHttp(port, {
      method: 'POST',
      target: '/api/mailbox/access-tokens',
      headers: [auth(m.token), ['Content-Type', 'application/json'], ['Content-Encoding', 'identity']],
      body: json,
    });
    expect('error' in plain ? plain.error : plain.status).toBe(201);
  });
});

describe('hostile input: requests the HTTP parser refuses', () => {
  const get = (extra: string) =>
    Buffer.from(`GET /api/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${extra}\r\n`, 'latin1');

  it('answers malformed requests with a 400 envelope instead of a bare 400', async () => {
    for (const bytes of [
      get('Content-Length: 2\r\nContent-Length: 5\r\n'),
      get('Content-Length: abc\r\n'),
      get('X-Bad\u0001Name: v\r\n'),
      get('Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n'),
      Buffer.concat([
        Buffer.from('GET /api/messages?q='),
        Buffer.from('é', 'utf8'),
        Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n'),
      ]),
    ]) {
      expect(envelopeOf(await rawHttp(port, { bytes }), 400).errMsg).toBe('The HTTP request is malformed.');
    }
  });

  it('answers an over-long request line or header section with a 431 envelope, read to the end', async () => {
    const longTarget = {
      method: 'GET',
      target: `/api/messages?pad=${'p'.repeat(70_000)}`,
      headers: [auth(m.token)] as [string, string][],
    };
    envelopeOf(await rawHttp(port, longTarget), 431);
    const longHeader = {
      method: 'GET',
      target: '/api/messages',
      headers: [auth(m.token), ['X-Pad', 'p'.repeat(20_000)]] as [string, string][],
    };
    expect(envelopeOf(await rawHttp(port, longHeader), 431).errMsg).toBe(
      'The request line or header section is too large.',
    );
    // The server stays healthy for the next client.
    expect(requestBytes(longTarget, port).length).toBeGreaterThan(70_000);
    expect((await server.api(m.token).get('/api/messages')).status).toBe(200);
  });
});

describe('hostile input: MCP tools/call params', () => {
  it('answers arguments that are not an object with JSON-RPC -32602 invalid params, not -32603 internal error', async () => {
    for (const args of ['"text"', '[]', '5']) {
      const res = await rawHttp(port, {
        method: 'POST',
        target: '/mcp',
        headers: [
          auth(m.token),
          ['Content-Type', 'application/json'],
          ['Accept', 'application/json, text/event-stream'],
        ],
        body: Buffer.from(
          `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_messages","arguments":${args}}}`,
        ),
      });
      if ('error' in res) throw new Error(res.error);
      expect(res.status).toBe(200);
      const data = res.body
        .toString('utf8')
        .split('\n')
        .find((l) => l.startsWith('data: '))!
        .slice(6);
      expect(JSON.parse(data)).toMatchObject({ id: 7, error: { code: -32602 } });
    }
  });
});
