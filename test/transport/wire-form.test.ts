import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate } from 'mailauth';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody } from '../delivery/helpers.js';
import { submitter } from '../smtp/world.js';
import { startDnsStub } from './dns-stub.js';
import { startSink } from './smtp-sink.js';
import { runWorkerUntil, startTransportServer } from './world.js';

// What leaves for a relay: as submitted (587) or composed (API), declared 8-bit where the relay
// offers 8BITMIME, converted and signed again where it does not, refused where SMTPUTF8 is needed
// and not offered (docs/wire.md).

type Sink = Awaited<ReturnType<typeof startSink>>;
interface World {
  server: TestServer;
  sink: Sink;
  alice: { mailboxId: string; address: string; token: string };
  domain: { domainId: string; name: string; token: string };
}
let full: World;
let plain: World;
let dns: Awaited<ReturnType<typeof startDnsStub>>;

async function world(without: { eightBitMime?: boolean; smtpUtf8?: boolean }): Promise<World> {
  const sink = await startSink({ without });
  const server = await startTransportServer({ SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.port}?tls=insecure` });
  const domain = await server.createDomain();
  const alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
  return { server, sink, alice, domain };
}

beforeAll(async () => {
  dns = await startDnsStub({});
  full = await world({});
  plain = await world({ eightBitMime: true, smtpUtf8: true });
});
afterAll(async () => {
  for (const w of [full, plain]) {
    await w?.server.close();
    await w?.sink.close();
  }
  await dns?.close();
});

const statusOf = (w: World, id: string) =>
  rowsOf(() => w.server)`select delivery_status from message where id = ${id}`.then((r) => r[0].delivery_status);

async function submitRaw(w: World, raw: string): Promise<void> {
  const t = submitter(w.server, w.alice.address, w.alice.token);
  try {
    await t.sendMail({ envelope: { from: w.alice.address, to: ['carol@remote.example'] }, raw });
  } finally {
    t.close();
  }
}

const eightBitRaw = (w: World, subject: string) =>
  [
    `From: Alice <${w.alice.address}>`,
    'To: carol@remote.example',
    `Subject: ${subject}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    'line one: Grüße',
    '',
    'line three',
    '',
  ].join('\r\n');

const received = (w: World, subject: string) =>
  w.sink.accepted.find((m) => m.raw.toString('utf8').includes(`Subject: ${subject}`));
const bodyOf = (raw: Buffer) => raw.subarray(raw.indexOf('\r\n\r\n') + 4);

async function dkimVerdict(w: World, raw: Buffer) {
  const record = (await w.server.api(w.domain.token).get('/api/domain/dkim')).body.data;
  dns.records[record.name] = { TXT: [record.value] };
  const resolver = (await import('../../src/core/base/net/dns-resolver.js')).dnsResolver(dns.server);
  const verdict = await authenticate(raw, {
    ip: '127.0.0.1',
    helo: 'mail.test',
    sender: w.alice.address,
    resolver,
    disableArc: true,
    disableBimi: true,
    disableDmarc: true,
  });
  return verdict.dkim.results[0]?.status.result;
}

describe('to a relay that offers 8BITMIME', () => {
  it('relays a 587 submission with its body byte for byte, BODY=8BITMIME and SIZE= declared', async () => {
    const raw = eightBitRaw(full, 'byte for byte');
    await submitRaw(full, raw);
    await runWorkerUntil(full.server, async () => received(full, 'byte for byte') !== undefined, 'relayed');
    const got = received(full, 'byte for byte')!;
    expect(bodyOf(got.raw).equals(bodyOf(Buffer.from(raw)))).toBe(true);
    expect(got.raw.toString('utf8')).not.toContain('8bit\r\n\r\n\r\n');
    expect(got.mailArgs).toMatchObject({ BODY: '8BITMIME', SIZE: String(got.raw.length) });
    expect(await dkimVerdict(full, got.raw)).toBe('pass');
  });
});

describe('to a relay without 8BITMIME or SMTPUTF8', () => {
  it('converts the 8-bit body to quoted-printable and signs what it sends', async () => {
    await submitRaw(plain, eightBitRaw(plain, 'seven bit'));
    await runWorkerUntil(plain.server, async () => received(plain, 'seven bit') !== undefined, 'relayed');
    const got = received(plain, 'seven bit')!;
    expect(got.raw.some((b) => b > 0x7f)).toBe(false);
    expect(got.mailArgs.BODY).toBeUndefined();
    expect(got.raw.toString('latin1')).toContain('Content-Transfer-Encoding: quoted-printable');
    expect(got.raw.toString('latin1')).toContain('Gr=C3=BC=C3=9Fe');
    expect(await dkimVerdict(plain, got.raw)).toBe('pass');
  });

  it('fails a message to a UTF-8 address with 5.6.7 and bounces it, sending nothing', async () => {
    const res = await plain.server
      .api(plain.alice.token)
      .post('/api/messages/send', sendBody(['jörg@bücher.example'], { subject: 'needs utf8' }));
    expect(res.status).toBe(202);
    const id = res.body.data.messageId as string;
    await runWorkerUntil(plain.server, async () => (await statusOf(plain, id)) === 'failed', 'failed');
    const [recipient] = await rowsOf(() => plain.server)`select status, remote_reply from message_recipient
      where message_id = ${id}`;
    expect(recipient).toMatchObject({ status: 'failed', remote_reply: expect.stringMatching(/^553 5\.6\.7 /) });
    expect(plain.sink.copiesFor('jörg@bücher.example')).toBe(0);
  });
});

describe('SMTPUTF8 towards a relay that offers it', () => {
  it('sends to UTF-8 addresses with the SMTPUTF8 parameter', async () => {
    const res = await full.server
      .api(full.alice.token)
      .post('/api/messages/send', sendBody(['jörg@bücher.example', 'joe@bücher.example'], { subject: 'intl' }));
    expect(res.status).toBe(202);
    await runWorkerUntil(full.server, async () => received(full, 'intl') !== undefined, 'relayed');
    const got = received(full, 'intl')!;
    expect(got.mailArgs.SMTPUTF8).toBe(true);
    expect(got.to.sort()).toEqual(['joe@bücher.example', 'jörg@bücher.example']);
  });
});
