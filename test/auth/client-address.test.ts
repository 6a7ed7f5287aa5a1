import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintTokenPlaintext } from '../../src/core/access/token-format.js';
import { connect, refusal } from '../realtime/client.js';

// TRUST_PROXY on every channel that reads X-Forwarded-For (docs/api.md, "Client address"), seen
// through the credential-failure budget, which counts per client address: with a budget of 2, a
// third bad token from the same client is 429, from another client 401. A client that rewrites the
// leftmost X-Forwarded-For entry gets no fresh budget, and cannot spend a victim's budget by naming
// it. The test server's socket peer (the nearest proxy) is always 127.0.0.1.

const BUDGET = 2;
const bad = () => mintTokenPlaintext('mailbox'); // well-formed, unknown: a failed credential

type Channel = 'http' | 'mcp' | 'socket.io';
const CHANNELS: Channel[] = ['http', 'mcp', 'socket.io'];

/** One bad-token attempt on a channel with an X-Forwarded-For header: the status it gets. */
async function attempt(server: TestServer, channel: Channel, forwardedFor: string): Promise<number> {
  const headers = { authorization: `Bearer ${bad()}`, 'x-forwarded-for': forwardedFor };
  if (channel === 'http') return (await fetch(`${server.url}/api/messages`, { headers })).status;
  if (channel === 'mcp') {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    await res.body?.cancel();
    return res.status;
  }
  return (await refusal(connect(server.url, { headers }))).code;
}

let n = 0;
/** A fresh documentation address (RFC 5737) per client, so the cases never share a budget. */
const nextClient = () => `198.51.100.${++n}`;
const spoof = (i: number) => `203.0.113.${i}`;

/**
 * What a deployment's proxies append for a client, given a spoofed leftmost entry the client wrote:
 * `hops` proxies in front of the server, the outer ones at 10.0.0.x.
 */
const chain = (hops: number, client: string, spoofed: string, outer = 1) =>
  [spoofed, client, ...Array.from({ length: Math.max(0, hops - 1) }, (_, i) => `10.0.${outer}.${i + 1}`)].join(', ');

describe.each([
  { trust: '1', hops: 1 },
  { trust: '2', hops: 2 },
  { trust: '127.0.0.0/8, 10.0.0.0/8', hops: 2 },
])('TRUST_PROXY=$trust', ({ trust, hops }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      roles: ['api', 'realtime'],
      env: { TRUST_PROXY: trust, AUTH_FAILURES_PER_15M: String(BUDGET) },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each(CHANNELS)('%s: counts the client the trusted hops name, whatever it writes on the left', async (channel) => {
    const client = nextClient();
    const victim = nextClient();
    // The attacker rotates its own leftmost entry, and names the victim too.
    for (let i = 0; i < BUDGET; i++)
      expect(await attempt(server, channel, chain(hops, client, i === 0 ? victim : spoof(i), i + 1))).toBe(401);
    expect(await attempt(server, channel, chain(hops, client, spoof(99), 7))).toBe(429);
    expect(await attempt(server, channel, chain(hops, victim, spoof(98)))).toBe(401);
    expect(await attempt(server, channel, chain(hops, nextClient(), client))).toBe(401);
  });
});

describe('TRUST_PROXY unset: the socket peer, X-Forwarded-For ignored on every channel', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ roles: ['api', 'realtime'], env: { AUTH_FAILURES_PER_15M: String(BUDGET) } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('spends one budget for 127.0.0.1 whatever the header names, on HTTP, MCP and Socket.IO', async () => {
    expect(await attempt(server, 'http', chain(1, nextClient(), spoof(1)))).toBe(401);
    expect(await attempt(server, 'mcp', chain(2, nextClient(), spoof(2)))).toBe(401);
    for (const channel of CHANNELS) expect(await attempt(server, channel, chain(1, nextClient(), spoof(3)))).toBe(429);
  });
});
