import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Socket } from 'socket.io-client';
import { startTestServer, type TestServer } from '../support/harness.js';
import { connect, refusal } from './client.js';
import { fails, mcpClient } from '../mcp/helpers.js';

// docs/api.md, "Per-token bounds": one token holds at most MAX_SOCKETS_PER_TOKEN Socket.IO
// connections and MAX_WAITS_PER_TOKEN long-polls (HTTP wait and MCP wait_for_message share the
// count); beyond, a clear 429 (connect_error { code: 429 }, envelope with Retry-After, tool error).

let server: TestServer;
let a: { address: string; token: string };
let b: { address: string; token: string };

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'realtime'],
    env: { MAX_SOCKETS_PER_TOKEN: '3', MAX_WAITS_PER_TOKEN: '2' },
  });
  const d = await server.createDomain();
  a = await server.createMailbox(d.token, `a@${d.name}`);
  b = await server.createMailbox(d.token, `b@${d.name}`);
});
afterAll(async () => {
  await server?.close();
});

const connected = (token: string) =>
  new Promise<Socket>((resolve, reject) => {
    const s = connect(server.url, { auth: { token } });
    s.once('connect', () => resolve(s));
    s.once('connect_error', (e) => reject(e));
  });

describe('per-token bounds', () => {
  it('refuses the socket past MAX_SOCKETS_PER_TOKEN with connect_error 429, frees the slot on disconnect', async () => {
    const open = await Promise.all([1, 2, 3].map(() => connected(a.token)));
    expect(await refusal(connect(server.url, { auth: { token: a.token } }))).toMatchObject({ code: 429 });
    // Another token is not affected.
    const other = await connected(b.token);
    open[0]!.close();
    await new Promise((r) => setTimeout(r, 200));
    const again = await connected(a.token);
    for (const s of [...open, other, again]) s.close();
  });

  it('refuses a long-poll past MAX_WAITS_PER_TOKEN over HTTP and MCP alike, and frees the slot when a wait ends', async () => {
    const api = server.api(a.token);
    const w1 = api.get('/api/messages/wait?timeoutMs=3000');
    const w2 = api.get('/api/messages/wait?timeoutMs=3000');
    await new Promise((r) => setTimeout(r, 300));
    const third = await api.get('/api/messages/wait?timeoutMs=1000');
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ code: 429, data: null });
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    const client = await mcpClient(server, a.token, { listTools: false });
    expect(await fails(client, 'wait_for_message', { timeoutMs: 1000 })).toMatchObject({ code: 429 });
    // Another token still waits.
    expect((await server.api(b.token).get('/api/messages/wait?timeoutMs=0')).status).toBe(200);
    expect((await w1).status).toBe(200);
    expect((await w2).status).toBe(200);
    expect((await api.get('/api/messages/wait?timeoutMs=0')).status).toBe(200);
    await client.close();
  });
});
