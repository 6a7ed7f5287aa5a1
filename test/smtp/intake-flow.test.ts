import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf } from '../delivery/helpers.js';
import { deliverQueued, writeQueuedSubmissions } from '../support/intake-queue.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { loggedInWire, mxPort, sendToMx, startSmtpTestServer } from './world.js';
import { registry } from '../../src/telemetry/metric-registry.js';
import { FLOW_SAMPLE_MS } from '../../src/core/flows/intake/intake-flow.js';
import { setTimeout as sleep } from 'node:timers/promises';

// Flow control of queued intake (docs/api.md, "Queued intake"; core/flows/intake/intake-flow.ts):
// at SMTP_QUEUE_HIGH_WATER messages waiting in a port's queue, a new MAIL FROM on that port waits
// for the workers, at most SMTP_IN_FLOW_DELAY, and is then taken anyway: senders slow down, nothing
// is refused or lost. The server here has no worker role, so the queue stays as the test leaves it.

const HIGH_WATER = 2;
let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let x: { domainId: string; name: string; token: string };
const q = rowsOf(() => server);
let boxes = 0;
const newBox = () => server.createMailbox(x.token, `flow${++boxes}@${x.name}`);
const pending = async (table: 'inbound_queue' | 'submission_queue') =>
  Number(
    (table === 'inbound_queue'
      ? await q`select count(*)::int as n from inbound_queue where status = 'pending'`
      : await q`select count(*)::int as n from submission_queue where status = 'pending'`)[0].n,
  );

/** mailbox_smtp_flow_waits_total{listener, outcome}. */
async function flowWaits(listener: 'mx' | 'submission', outcome: 'drained' | 'delayed'): Promise<number> {
  const metric = await registry.getSingleMetric('mailbox_smtp_flow_waits_total')!.get();
  return metric.values.find((v) => v.labels.listener === listener && v.labels.outcome === outcome)?.value ?? 0;
}

/** A MAIL FROM judges by a depth reading at most FLOW_SAMPLE_MS old: past that age the next one reads the queue. */
const readingAged = () => sleep(FLOW_SAMPLE_MS + 20);

const mail = (to: string, subject: string) => rfc5322({ from: 'news@sender.example', to, subject, body: 'flow' });

beforeAll(async () => {
  dns = await startDnsStub({
    'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_dmarc.sender.example': { TXT: ['v=DMARC1; p=none'] },
  });
  server = await startSmtpTestServer({
    env: { DNS_SERVERS: dns.server, SMTP_QUEUE_HIGH_WATER: String(HIGH_WATER), SMTP_IN_FLOW_DELAY: '1500ms' },
  });
  x = await server.createDomain();
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

describe('flow control on port 25', () => {
  it('takes mail at once below the high water, holds MAIL FROM at it for the delay, then takes the message anyway', async () => {
    const box = await newBox();
    const delayed0 = await flowWaits('mx', 'delayed');
    for (let i = 0; i < HIGH_WATER; i++)
      expect(await sendToMx(mxPort(server), box.address, mail(box.address, `below ${i}`))).toMatch(/^250 /);
    expect(await flowWaits('mx', 'delayed')).toBe(delayed0);
    expect(await pending('inbound_queue')).toBe(HIGH_WATER);

    // At the high water, with no worker to drain it: held for the whole delay, then accepted.
    await readingAged();
    expect(await sendToMx(mxPort(server), box.address, mail(box.address, 'over'))).toMatch(/^250 /);
    expect(await flowWaits('mx', 'delayed')).toBe(delayed0 + 1);
    expect(await pending('inbound_queue')).toBe(HIGH_WATER + 1);

    await deliverQueued(server.runtime);
    const stored = await q`select subject from message where mailbox_id = ${box.mailboxId} order by subject`;
    expect(stored.map((r) => r.subject)).toEqual(['below 0', 'below 1', 'over']);
  });

  it('answers a held MAIL FROM as soon as the workers bring the queue below the high water', async () => {
    const box = await newBox();
    for (let i = 0; i < HIGH_WATER; i++) await sendToMx(mxPort(server), box.address, mail(box.address, `fill ${i}`));
    await readingAged();
    const drained0 = await flowWaits('mx', 'drained');
    const wire = await SmtpWire.connect(mxPort(server));
    try {
      await wire.cmd('EHLO peer.sender.example', 250);
      const held = wire.cmd('MAIL FROM:<news@sender.example>', 250);
      await deliverQueued(server.runtime); // what a worker does meanwhile
      await held;
      expect(await flowWaits('mx', 'drained')).toBe(drained0 + 1);
      await wire.cmd(`RCPT TO:<${box.address}>`, 250);
      await wire.cmd('DATA', 354);
      expect((await wire.cmd(`${mail(box.address, 'after the drain')}\r\n.`, 250)).last).toMatch(/Queued as/);
      await wire.cmd('QUIT', 221);
    } finally {
      wire.close();
    }
    await deliverQueued(server.runtime);
    const stored = await q`select subject from message where mailbox_id = ${box.mailboxId} order by subject`;
    expect(stored.map((r) => r.subject)).toEqual(['after the drain', 'fill 0', 'fill 1']);
  });
});

describe('flow control on port 587', () => {
  it("holds a submission's MAIL FROM by its own queue's depth, not port 25's", async () => {
    const box = await newBox();
    const submit = async (wire: SmtpWire, subject: string) => {
      await wire.cmd(`MAIL FROM:<${box.address}>`, 250);
      await wire.cmd(`RCPT TO:<${box.address}>`, 250);
      await wire.cmd('DATA', 354);
      return (await wire.cmd(`${rfc5322({ from: box.address, to: box.address, subject, body: 'flow' })}\r\n.`, 250))
        .last;
    };
    // Port 25's queue over its high water does not hold 587.
    for (let i = 0; i < HIGH_WATER; i++) await sendToMx(mxPort(server), box.address, mail(box.address, `mx ${i}`));
    const delayed0 = await flowWaits('submission', 'delayed');
    const wire = await loggedInWire(server, box);
    wire.awaitQueued = false; // the queue is what this test looks at
    try {
      for (let i = 0; i < HIGH_WATER; i++) expect(await submit(wire, `sub ${i}`)).toMatch(/^250 /);
      expect(await flowWaits('submission', 'delayed')).toBe(delayed0);
      expect(await pending('submission_queue')).toBe(HIGH_WATER);
      await readingAged();
      expect(await submit(wire, 'sub over')).toMatch(/^250 /);
      expect(await flowWaits('submission', 'delayed')).toBe(delayed0 + 1);
      await wire.cmd('QUIT', 221);
    } finally {
      wire.close();
    }
    await writeQueuedSubmissions(server.runtime);
    await deliverQueued(server.runtime);
    const sent = await q`select subject from message where mailbox_id = ${box.mailboxId} and direction = 'outbound'
      order by subject`;
    expect(sent.map((r) => r.subject)).toEqual(['sub 0', 'sub 1', 'sub over']);
  });
});
