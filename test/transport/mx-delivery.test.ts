import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody } from '../delivery/helpers.js';
import { startDnsStub } from './dns-stub.js';
import { startSink } from './smtp-sink.js';
import { recipientsOfMessage, runWorkerUntil, startTransportServer } from './world.js';

// SMTP_DELIVERY=mx: the recipient domain's MX, found through DNS_SERVERS (a local stub), on
// SMTP_DELIVERY_PORT (the sink's port, since nothing may bind 25 here).
let server: TestServer;
let sink: Awaited<ReturnType<typeof startSink>>;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let alice: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);
const statusOf = async (id: string) =>
  (await q`select delivery_status from message where id = ${id}`)[0].delivery_status as string;

beforeAll(async () => {
  sink = await startSink();
  dns = await startDnsStub({
    'remote.test': { MX: [{ priority: 10, exchange: 'mx1.remote.test' }] },
    'mx1.remote.test': { A: ['127.0.0.1'] },
    // The preferred host does not answer (nothing listens on 127.0.0.2), the backup does.
    'backup.test': {
      MX: [
        { priority: 5, exchange: 'dead.backup.test' },
        { priority: 20, exchange: 'live.backup.test' },
      ],
    },
    'dead.backup.test': { A: ['127.0.0.2'] },
    'live.backup.test': { A: ['127.0.0.1'] },
    'implicit.test': { A: ['127.0.0.1'] },
    'nullmx.test': { MX: [{ priority: 0, exchange: '' }] },
  });
  server = await startTransportServer({
    SMTP_DELIVERY: 'mx',
    // The stub's MX hosts are on loopback: allowed here only (docs/api.md, "Network targets").
    ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
    SMTP_DELIVERY_PORT: String(sink.port),
    DNS_SERVERS: dns.server,
  });
  const x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
});
afterAll(async () => {
  await server?.close();
  await sink?.close();
  await dns?.close();
});
beforeEach(() => sink.script({}));

async function send(to: string[]): Promise<string> {
  return (await server.api(alice.token).post('/api/messages/send', sendBody(to))).body.data.messageId;
}

describe('direct MX delivery', () => {
  it('delivers to the MX host, one transaction per recipient domain', async () => {
    const id = await send(['a@remote.test', 'b@remote.test', 'c@implicit.test']);
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'delivered');
    const remote = sink.accepted.filter((m) => m.to.includes('a@remote.test'));
    expect(remote).toHaveLength(1);
    expect(remote[0]!.to.sort()).toEqual(['a@remote.test', 'b@remote.test']);
    expect(sink.copiesFor('c@implicit.test')).toBe(1); // no MX: the domain's own address (RFC 5321 §5.1)
  });

  it('moves on to the next MX when the preferred one does not answer', async () => {
    const id = await send(['d@backup.test']);
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'delivered', 'delivered');
    expect(sink.copiesFor('d@backup.test')).toBe(1);
  });

  it('fails (and bounces) a null-MX domain and a domain that does not exist', async () => {
    const id = await send(['e@nullmx.test', 'f@no-such-domain.test']);
    await runWorkerUntil(server, async () => (await statusOf(id)) === 'failed', 'failed');
    const recipients = await recipientsOfMessage(server, id);
    expect(recipients.map((r) => [r.address, r.status, r.remote_reply.slice(0, 10)])).toEqual([
      ['e@nullmx.test', 'failed', '556 5.1.10'],
      ['f@no-such-domain.test', 'failed', '550 5.1.2 '],
    ]);
    const [bounce] =
      await q`select body_text from message where mailbox_id = ${alice.mailboxId} and in_reply_to_message_id = ${id}`;
    expect(bounce.body_text).toContain('e@nullmx.test');
    expect(bounce.body_text).toContain('f@no-such-domain.test');
  });
});
