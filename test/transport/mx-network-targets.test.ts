import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody } from '../delivery/helpers.js';
import { withoutAddresses } from '../../src/core/flows/outbound/smtp-send.js';
import { startDnsStub } from './dns-stub.js';
import { recipientsOfMessage, runWorkerUntil, startTransportServer } from './world.js';

// docs/api.md, "Network targets": with ALLOW_PRIVATE_NETWORK_TARGETS unset, direct MX delivery
// never connects to loopback, private, link-local or metadata addresses an outsider's MX names,
// checked by a listener on such an address (127.0.0.1, the only one a test can bind), and the
// reply stored for the sender names no address.

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let listener: net.Server;
let port = 0;
let connections = 0;
let alice: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);
const statusOf = async (id: string) =>
  (await q`select delivery_status from message where id = ${id}`)[0].delivery_status as string;

beforeAll(async () => {
  listener = net.createServer((socket) => {
    connections++;
    socket.end('220 trap ESMTP\r\n');
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
  port = (listener.address() as net.AddressInfo).port;
  dns = await startDnsStub({
    'loopback.test': { MX: [{ priority: 10, exchange: 'mx.loopback.test' }] },
    'mx.loopback.test': { A: ['127.0.0.1'] },
    'private.test': { MX: [{ priority: 10, exchange: 'mx.private.test' }] },
    'mx.private.test': { A: ['10.0.0.7', '192.168.1.1', '172.16.0.1'] },
    'metadata.test': { MX: [{ priority: 10, exchange: 'mx.metadata.test' }] },
    'mx.metadata.test': { A: ['169.254.169.254'], AAAA: ['fe80::1', '::1'] },
    'mapped.test': { MX: [{ priority: 10, exchange: 'mx.mapped.test' }] },
    'mx.mapped.test': { AAAA: ['::ffff:127.0.0.1', 'fd00::1'] },
    'implicit-loopback.test': { A: ['127.0.0.1'] },
  });
  server = await startTransportServer({
    SMTP_DELIVERY: 'mx',
    SMTP_DELIVERY_PORT: String(port),
    DNS_SERVERS: dns.server,
  });
  const x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
  await new Promise((r) => listener.close(r));
});

describe('direct MX delivery and private network targets', () => {
  it('connects to none of them, fails each recipient for good with 5.4.4, and stores no address', async () => {
    const to = ['a@loopback.test', 'b@private.test', 'c@metadata.test', 'd@mapped.test', 'e@implicit-loopback.test'];
    const res = await server.api(alice.token).post('/api/messages/send', sendBody(to));
    const id = res.body.data.messageId as string;
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'failed', 'failed');
    const recipients = await recipientsOfMessage(server, id);
    expect(recipients).toHaveLength(to.length);
    for (const r of recipients) {
      expect(r.status).toBe('failed');
      expect(r.remote_reply).toMatch(/^550 5\.4\.4 /);
      expect(r.remote_reply).not.toMatch(/\d+\.\d+\.\d+\.\d+|::/);
    }
    expect(connections).toBe(0);
  });
});

describe('withoutAddresses', () => {
  it('hides IPv4 and IPv6 addresses in socket errors and keeps everything else', () => {
    expect(withoutAddresses('connect ECONNREFUSED 10.0.0.5:25')).toBe('connect ECONNREFUSED [address]');
    expect(withoutAddresses('connect ETIMEDOUT fd00::1:25')).toBe('connect ETIMEDOUT [address]');
    expect(withoutAddresses('connect ECONNREFUSED [fe80::1%eth0]:25')).toBe('connect ECONNREFUSED [address]');
    expect(withoutAddresses('451 4.4.1 ESOCKET: Greeting never received at 12:30:45')).toBe(
      '451 4.4.1 ESOCKET: Greeting never received at 12:30:45',
    );
  });
});
