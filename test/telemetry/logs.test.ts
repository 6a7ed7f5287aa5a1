import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPinoLogger } from '../../src/logging/pino-logger.js';
import type { TestServer } from '../support/harness.js';
import { startSmtpTestServer, mxPort } from '../smtp/world.js';
import { deliverToMx } from '../smtp/mx-peer.js';
import { startDnsStub } from '../transport/dns-stub.js';

// The logs an operator reads: pino JSON lines through the core's Logger port, one
// access-log line per HTTP request without a token, received mail, and a warning when mail to an
// outside address is queued with no way out configured.

const lines: Record<string, any>[] = [];
const capture = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    done();
  },
});
let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let alice: { mailboxId: string; address: string; token: string };
const find = (event: string, pred: (l: Record<string, any>) => boolean = () => true) =>
  lines.find((l) => l.event === event && pred(l));

beforeAll(async () => {
  dns = await startDnsStub({ 'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  server = await startSmtpTestServer({
    roles: ['api', 'smtp', 'worker'],
    env: { DNS_SERVERS: dns.server, WORKER_POLL_INTERVAL: '100ms' },
    log: createPinoLogger('info', { stream: capture }),
  });
  const domain = await server.createDomain();
  alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

describe('logs', () => {
  it('writes one http.request line per request: method, route pattern, status, ms, tid, and never the token', async () => {
    const res = await fetch(`${server.url}/api/messages/msg_nope?access_token=${alice.token}`, {
      headers: { authorization: `Bearer ${alice.token}` },
    });
    const tid = ((await res.json()) as { tid: string }).tid;
    await expect.poll(() => find('http.request', (l) => l.tid === tid)).toBeDefined();
    const line = find('http.request', (l) => l.tid === tid)!;
    expect(line).toMatchObject({ level: 'info', method: 'GET', route: '/api/messages/:messageId', status: 404 });
    expect(typeof line.ms).toBe('number');
    expect(line.ts).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(lines.filter((l) => l.event === 'http.request' && l.tid === tid)).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain(alice.token);
    expect(JSON.stringify(lines)).not.toContain(alice.token.slice(0, 20));
  });

  it('logs each inbound delivery with its message ids and verdicts', async () => {
    const raw = `From: Peer <peer@sender.example>\r\nTo: ${alice.address}\r\nSubject: hi\r\n\r\nhello\r\n`;
    await deliverToMx(mxPort(server), { from: 'peer@sender.example', to: alice.address }, raw);
    await expect.poll(() => find('smtp.inbound_delivered')).toBeDefined();
    expect(find('smtp.inbound_delivered')).toMatchObject({
      messageIds: [expect.stringMatching(/^msg_/)],
      recipients: 1,
      clientAddress: '127.0.0.1',
      spf: 'pass',
    });
  });

  it('warns once when mail to an outside address is queued and no relay or MX delivery is configured', async () => {
    const sent = await fetch(`${server.url}/api/messages/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ toAddress: 'someone@outside.example', subject: 'out', bodyText: 'x' }),
    });
    const { messageId } = ((await sent.json()) as { data: { messageId: string } }).data;
    await expect
      .poll(() => find('outbox.external_delivery_not_configured', (l) => l.messageId === messageId))
      .toBeDefined();
    expect(find('outbox.external_delivery_not_configured', (l) => l.messageId === messageId)).toMatchObject({
      level: 'warn',
      waiting: 1,
      hint: expect.stringContaining('SMTP_RELAY_URL'),
    });
  });
});
