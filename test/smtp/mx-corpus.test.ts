import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody } from '../delivery/helpers.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { mxPort, startSmtpTestServer } from './world.js';
import { deliverToMx, mxRefusal } from './mx-peer.js';

// Real-world and malformed MIME through the inbound port: every file is a real .eml under
// test/fixtures/mime ({rcpt} and {parent} are filled in). No crash, correct fields, bounded memory.
const FIXTURES = new URL('../fixtures/mime/', import.meta.url);

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let alice: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);
const MiB = 1024 * 1024;

beforeAll(async () => {
  dns = await startDnsStub({});
  server = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server, SMTP_MAX_MESSAGE_BYTES: String(40 * MiB) } });
  const x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

async function receive(raw: string | Buffer): Promise<any> {
  const before = new Set((await q`select id from message where mailbox_id = ${alice.mailboxId}`).map((r) => r.id));
  await deliverToMx(mxPort(server), { from: 'peer@sender.example', to: alice.address }, raw);
  const rows = (await q`select * from message where mailbox_id = ${alice.mailboxId} and direction = 'inbound'`).filter(
    (r) => !before.has(r.id),
  );
  expect(rows).toHaveLength(1);
  const attachments =
    await q`select filename, content_type, size_bytes, blob_key from attachment where message_id = ${rows[0].id} order by created_at, id`;
  return { ...rows[0], attachments: attachments.map((a) => ({ ...a, size_bytes: Number(a.size_bytes) })) };
}

const fixture = (name: string, vars: Record<string, string> = {}) =>
  readFileSync(new URL(name, FIXTURES), 'utf8').replace(
    /\{(\w+)\}/g,
    (_, k: string) => vars[k] ?? (k === 'rcpt' ? alice.address : `{${k}}`),
  );

describe('MIME corpus through the MX port', () => {
  it('has fixtures', () => {
    expect(readdirSync(FIXTURES).filter((f) => f.endsWith('.eml')).length).toBeGreaterThanOrEqual(12);
  });

  it('decodes RFC 2047 encoded words in UTF-8 and ISO-8859-1', async () => {
    const m = await receive(fixture('utf8-encoded-words.eml'));
    expect(m).toMatchObject({
      from_address: 'jose@sender.example',
      from_display_name: 'José García',
      subject: 'Grüße aus München 🍺 — teil 2',
      internet_message_id: '<utf8-words-1@sender.example>',
    });
    expect(m.body_text.trim()).toBe('Schöne Grüße, ✓ erledigt.');
  });

  it('keeps an 8-bit UTF-8 body', async () => {
    const m = await receive(fixture('eight-bit.eml'));
    expect(m.from_display_name).toBe('Zoë');
    expect(m.body_text).toContain('日本語, Ελληνικά, emoji 🎉');
  });

  it('walks nested multiparts: alternative bodies, a related inline image, a PDF and a forwarded message with its own attachment', async () => {
    const m = await receive(fixture('nested-multipart.eml'));
    expect(m.body_text.trim()).toBe('Plain version of the nested message.');
    expect(m.body_html).toContain('<p>HTML version</p>');
    expect(m.body_html).toContain('cid:logo@sender.example'); // cid links kept, not inlined
    expect(m.cc_addresses).toEqual(['else@other.example']);
    expect(m.attachments.map((a: any) => [a.filename, a.content_type])).toEqual([
      ['logo.png', 'image/png'],
      ['report.pdf', 'application/pdf'],
      ['message.eml', 'message/rfc822'],
    ]);
    const pdf = await server.runtime.services.blobs.get(m.attachments[1].blob_key);
    expect(pdf.subarray(0, 8).toString()).toBe('%PDF-1.4');
  });

  it('keeps a calendar invitation as invite.ics, an S/MIME signature verifiable from the raw, and windows-1252 text', async () => {
    const invite = await receive(fixture('calendar-invite.eml'));
    expect(invite.body_text.trim()).toBe('You are invited to Planning.');
    expect(invite.attachments.map((a: any) => [a.filename, a.content_type])).toEqual([['invite.ics', 'text/calendar']]);
    const smime = fixture('smime-signed.eml');
    const signed = await receive(smime);
    expect(signed.attachments.map((a: any) => a.filename)).toEqual(['smime.p7s']);
    const stored = await server.runtime.services.blobs.get(signed.raw_blob_key);
    // The signed part's bytes (between the boundaries) are what a verifier hashes: kept exactly.
    const part = (raw: string) => raw.slice(raw.indexOf('--sig\r\n'), raw.lastIndexOf('--sig--'));
    expect(part(stored.toString('utf8'))).toBe(part(smime));
    const cp1252 = readFileSync(new URL('windows-1252.eml', FIXTURES), 'latin1').replace('{rcpt}', alice.address);
    const legacy = await receive(Buffer.from(cp1252, 'latin1'));
    expect(legacy).toMatchObject({ from_display_name: 'François', subject: 'Résumé – € 20' });
    expect(legacy.body_text.trim()).toBe('Coût: 20 € – “quoted”');
  });

  it('handles pre-MIME, unterminated, broken-base64, unknown-charset, ISO-2022-JP, HTML-only and very long lines', async () => {
    expect((await receive(fixture('no-mime-headers.eml'))).body_text).toContain('Just text');
    const unterminated = await receive(fixture('missing-closing-boundary.eml'));
    expect(unterminated.body_text).toContain('Body before a boundary');
    expect(unterminated.attachments.map((a: any) => a.filename)).toEqual(['cut.bin']);
    const junk = await receive(fixture('broken-base64.eml'));
    expect(junk.attachments.map((a: any) => a.filename)).toEqual(['junk.bin']);
    expect((await receive(fixture('unknown-charset.eml'))).body_text).toContain('Text in a charset nobody knows.');
    const jp = await receive(fixture('iso-2022-jp.eml'));
    expect(jp.subject).toBe('こんにちは');
    expect(jp.body_text.trim()).toBe('こんにちは');
    const html = await receive(fixture('html-only.eml'));
    expect(html).toMatchObject({ body_text: null, body_format: 'html' });
    expect(html.body_html).toContain('<h1>Only HTML</h1>');
    expect((await receive(fixture('long-line.eml'))).body_text.trim()).toHaveLength(10_000);
  });

  it('sanitizes hostile attachment filenames and survives empty subjects and group syntax', async () => {
    const files = await receive(fixture('hostile-filenames.eml'));
    expect(files.attachments.map((a: any) => a.filename)).toEqual(['übersicht txt.exe', 'passwd']);
    const group = await receive(fixture('group-and-empty.eml'));
    expect(group).toMatchObject({ subject: '', to_addresses: [], from_address: 'group@sender.example' });
  });

  it('threads a real reply by In-Reply-To and References', async () => {
    const sent = await server
      .api(alice.token)
      .post('/api/messages/send', sendBody('replier@sender.example', { subject: 'Thread root' }));
    const [parent] = await q`select internet_message_id from message where id = ${sent.body.data.messageId}`;
    const m = await receive(fixture('reply-in-thread.eml', { parent: parent.internet_message_id }));
    expect(m).toMatchObject({ thread_id: sent.body.data.threadId, in_reply_to_message_id: sent.body.data.messageId });
  });
});

describe('huge and hostile MIME', () => {
  const head = (extra = '') => `From: big@sender.example\r\nTo: ALICE\r\nSubject: Big\r\nMIME-Version: 1.0\r\n${extra}`;

  it('streams a 25 MiB attachment to the blob store with bounded memory', async () => {
    const payload = Buffer.alloc(25 * MiB, 'a')
      .toString('base64')
      .replace(/.{76}/g, '$&\r\n');
    const raw =
      `${head('Content-Type: multipart/mixed; boundary="b"\r\n')}\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee attachment\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\nContent-Disposition: attachment; filename="big.bin"\r\n\r\n${payload}\r\n--b--\r\n`.replace(
        'ALICE',
        alice.address,
      );
    global.gc?.();
    const base = process.memoryUsage().heapUsed;
    let peak = base;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().heapUsed);
    }, 20);
    const m = await receive(raw);
    clearInterval(sampler);
    expect(m.attachments).toEqual([expect.objectContaining({ filename: 'big.bin', size_bytes: 25 * MiB })]);
    // The test's own 34 MiB string is already counted in `base`; the server side must not hold
    // the message several times over.
    expect(peak - base).toBeLessThan(150 * MiB);
  }, 120_000);

  it('caps a huge text body at 1 MiB characters while the raw message keeps all of it', async () => {
    const raw = `${head('Content-Type: text/plain\r\n')}\r\n${'word '.repeat(600_000)}\r\n`.replace(
      'ALICE',
      alice.address,
    );
    const m = await receive(raw);
    expect(m.body_text.length).toBe(1_048_576);
    expect((await server.runtime.services.blobs.get(m.raw_blob_key)).length).toBeGreaterThan(3_000_000);
  }, 60_000);

  it('refuses a MIME bomb nested 200 levels deep (554 5.6.0) and stays healthy', async () => {
    let body = 'leaf\r\n';
    for (let i = 199; i >= 0; i--)
      body = `--n${i}\r\nContent-Type: multipart/mixed; boundary="n${i + 1}"\r\n\r\n${body}--n${i}--\r\n`;
    const raw = `${head('Content-Type: multipart/mixed; boundary="n0"\r\n')}\r\n${body}`.replace(
      'ALICE',
      alice.address,
    );
    expect(await mxRefusal(mxPort(server), { from: 'bomb@sender.example', to: alice.address }, raw)).toMatch(
      /^554 5\.6\.0 MIME structure exceeds limits/,
    );
    expect((await receive(fixture('eight-bit.eml'))).subject).toBe('8-bit body');
  });

  it('refuses 5000 parts (554 5.6.0) and leaves no blobs of the parts already stored', async () => {
    const parts = Array.from(
      { length: 5000 },
      (_, i) =>
        `--p\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="p${i}"\r\n\r\nx\r\n`,
    ).join('');
    const raw = `${head('Content-Type: multipart/mixed; boundary="p"\r\n')}\r\n${parts}--p--\r\n`.replace(
      'ALICE',
      alice.address,
    );
    const countBlobs = async () => (await q`select count(*)::int as n from attachment`)[0].n;
    const before = await countBlobs();
    expect(await mxRefusal(mxPort(server), { from: 'bomb@sender.example', to: alice.address }, raw)).toMatch(
      /^554 5\.6\.0 /,
    );
    expect(await countBlobs()).toBe(before);
  });

  it('refuses an oversized part header (554 5.6.0) and an oversized message (552 5.3.4)', async () => {
    const fat = `--h\r\nContent-Type: text/plain\r\nX-Fat: ${'f'.repeat(200 * 1024)}\r\n\r\nbody\r\n--h--\r\n`;
    const raw = `${head('Content-Type: multipart/mixed; boundary="h"\r\n')}\r\n${fat}`.replace('ALICE', alice.address);
    expect(await mxRefusal(mxPort(server), { from: 'fat@sender.example', to: alice.address }, raw)).toMatch(
      /^554 5\.6\.0 /,
    );
    const huge =
      `${head('Content-Type: text/plain\r\n')}\r\n${'z'.repeat(998)}\r\n`.replace('ALICE', alice.address).repeat(1) +
      `${'z'.repeat(998)}\r\n`.repeat(42 * 1024);
    expect(await mxRefusal(mxPort(server), { from: 'fat@sender.example', to: alice.address }, huge)).toMatch(
      /552 5\.3\.4|closed|ECONNRESET|EPIPE/,
    );
  }, 60_000);
});
