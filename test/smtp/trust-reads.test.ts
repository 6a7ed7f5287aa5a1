import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { mcpClient, ok } from '../mcp/helpers.js';
import { rfc5322 } from './smtp-wire.js';
import { mxPort, startSmtpTestServer } from './world.js';
import { deliverToMx, dkimKey } from './mx-peer.js';

// docs/contract.md, "Inbound screening" (last bullet) and docs/trust.md: every read of a message
// (verification code, wait, list, detail, search, thread; HTTP and MCP) reports the origin and
// authenticated of its detail; `from` matches a domain or a whole address, never a display name
// or a look-alike domain; unauthenticated mail carries a warning and requireAuthenticated skips it.

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let bob: { mailboxId: string; address: string; token: string };
const peer = dkimKey('sender.example');
// Letters only: a tag of six hex digits (one run in sixteen) is itself a code the subject offers.
const tag = [...randomBytes(6)].map((b) => String.fromCharCode(97 + (b % 26))).join('');

const codeMail = (from: string, subject: string, code: string) =>
  rfc5322({ from, to: bob.address, subject, body: `Your verification code is ${code}. It expires in 10 minutes.` });

/** Port-25 mail whose envelope sender has no SPF record and no signature: unauthenticated. */
const forged = (from: string, subject: string, code: string) =>
  deliverToMx(mxPort(server), { from: 'bounce@forger.example', to: bob.address }, codeMail(from, subject, code));

beforeAll(async () => {
  dns = await startDnsStub({
    'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_dmarc.sender.example': { TXT: ['v=DMARC1; p=reject'] },
    [peer.name]: { TXT: [peer.txt] },
  });
  server = await startSmtpTestServer({
    roles: ['api', 'smtp', 'worker'],
    env: { SEND_RATE_LIMIT_PER_MINUTE: '1000', DNS_SERVERS: dns.server, WORKER_POLL_INTERVAL: '50ms' },
  });
  const domain = await server.createDomain(`reads-${tag}.test`);
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
}, 180_000);
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

const api = () => server.api(bob.token);
const code = (query: string) => api().get(`/api/messages/verification-code?timeoutMs=0&${query}`);

describe('trust on every read', () => {
  it('a spoofed code mail reads as external and unauthenticated everywhere, with a warning', async () => {
    await forged('GitHub <noreply@github.com>', `spoofed ${tag} code`, '314159');
    const res = await code('from=github.com');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({
      code: '314159',
      authenticated: false,
      warning: expect.stringContaining('not authenticated'),
      message: { origin: 'external', authenticated: false },
    });
    const id = res.body.data.message.messageId as string;
    const detail = (await api().get(`/api/messages/${id}`)).body.data;
    expect(detail).toMatchObject({ origin: 'external', authenticated: false });
    const trust = { origin: detail.origin, authenticated: detail.authenticated };

    const listed = (await api().get('/api/messages?limit=100')).body.data.items.find((m: any) => m.messageId === id);
    expect(listed).toMatchObject(trust);
    const thread = (await api().get(`/api/threads/${detail.threadId}`)).body.data.messages[0];
    expect(thread).toMatchObject(trust);
    // The worker indexes for search a moment after the message is stored.
    const searched = await vi.waitFor(
      async () => {
        const items = (await api().get(`/api/messages/search?q=${encodeURIComponent(`subject:${tag}`)}`)).body.data
          .items as any[];
        const hit = items.find((m) => m.messageId === id);
        if (!hit) throw new Error('not indexed yet');
        return hit;
      },
      { timeout: 15_000, interval: 200 },
    );
    expect(searched).toMatchObject(trust);

    const mcp = await mcpClient(server, bob.token);
    try {
      const viaMcp = await ok(mcp, 'get_verification_code', { from: 'github.com', timeoutMs: 0 });
      expect(viaMcp).toEqual(res.body.data);
      expect((await ok(mcp, 'get_message', { messageId: id })).authenticated).toBe(false);
    } finally {
      await mcp.close();
    }
  });

  it("an attachment's text reports the origin of the mail that carried it, on HTTP and MCP", async () => {
    const raw = [
      'From: Billing <billing@github.com>',
      `To: ${bob.address}`,
      `Subject: forged invoice ${tag}`,
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'See the attached invoice.',
      '--b',
      'Content-Type: text/plain; name="invoice.txt"',
      'Content-Disposition: attachment; filename="invoice.txt"',
      '',
      'Pay to account 12345 today.',
      '--b--',
      '',
    ].join('\r\n');
    await deliverToMx(mxPort(server), { from: 'bounce@forger.example', to: bob.address }, raw);
    const listed = (await api().get('/api/messages?limit=100')).body.data.items.find(
      (m: any) => m.subject === `forged invoice ${tag}`,
    );
    const detail = (await api().get(`/api/messages/${listed.messageId}`)).body.data;
    expect(detail).toMatchObject({ origin: 'external', authenticated: false });
    const attachmentId = detail.attachments[0].attachmentId as string;
    const text = await api().get(`/api/messages/${listed.messageId}/attachments/${attachmentId}/text`);
    expect(text.status, JSON.stringify(text.body)).toBe(200);
    expect(text.body.data).toMatchObject({
      text: expect.stringContaining('Pay to account'),
      origin: 'external',
      authenticated: false,
    });
    const mcp = await mcpClient(server, bob.token);
    try {
      const viaMcp = await ok(mcp, 'get_attachment', { messageId: listed.messageId, attachmentId });
      expect(viaMcp).toEqual(text.body.data);
    } finally {
      await mcp.close();
    }
  });

  it('wait_for_message reports what the detail reports, and requireAuthenticated skips forged mail', async () => {
    const since = (await api().get('/api/messages/wait?timeoutMs=0')).body.data.eventId as string;
    await forged('noreply@sender.example', `wait forged ${tag}`, '271828');
    const raw = await peer.sign(codeMail('noreply@sender.example', `wait signed ${tag}`, '161803'));
    await deliverToMx(mxPort(server), { from: 'b@sender.example', to: bob.address }, raw);

    const first = (await api().get(`/api/messages/wait?timeoutMs=0&sinceEventId=${since}&from=sender.example`)).body
      .data;
    expect(first.message).toMatchObject({ subject: `wait forged ${tag}`, origin: 'external', authenticated: false });
    expect(first.warning).toContain('not authenticated');
    const detail = (await api().get(`/api/messages/${first.message.messageId}`)).body.data;
    expect(first.message).toMatchObject({ origin: detail.origin, authenticated: detail.authenticated });

    const strict = (
      await api().get(
        `/api/messages/wait?timeoutMs=0&sinceEventId=${since}&from=sender.example&requireAuthenticated=true`,
      )
    ).body.data;
    expect(strict.message).toMatchObject({ subject: `wait signed ${tag}`, origin: 'external', authenticated: true });
    expect(strict.warning).toBeNull();

    // The newest code mail is the forged one; requireAuthenticated answers the signed one instead.
    const newest = await forged('noreply@sender.example', `newest forged ${tag}`, '141421');
    expect(newest.response).toMatch(/^250 /);
    expect((await code('from=sender.example')).body.data).toMatchObject({ code: '141421', authenticated: false });
    const mcp = await mcpClient(server, bob.token);
    try {
      const signed = await ok(mcp, 'get_verification_code', {
        from: 'noreply@sender.example',
        requireAuthenticated: true,
        timeoutMs: 0,
      });
      expect(signed).toMatchObject({ code: '161803', authenticated: true, warning: null });
      const waited = await ok(mcp, 'wait_for_message', {
        sinceEventId: since,
        from: 'sender.example',
        requireAuthenticated: true,
        timeoutMs: 0,
      });
      expect(waited.message.subject).toBe(`wait signed ${tag}`);
    } finally {
      await mcp.close();
    }
  });

  it('from matches a domain, its subdomains or a whole address; never a look-alike or a display name', async () => {
    await forged('"github.com" <x@evil.example>', `display ${tag}`, '111222');
    await forged('noreply@github.com.evil.example', `lookalike ${tag}`, '333444');
    await forged('noreply@notgithub.com', `prefix ${tag}`, '777888');
    for (const from of ['github.com', '@github.com', 'noreply@github.com', 'GitHub.com']) {
      const res = await code(`from=${encodeURIComponent(from)}&subjectContains=${tag}`);
      expect(res.body.data.message?.fromAddress ?? null, from).toBe('noreply@github.com');
    }
    await forged('alerts@mail.github.com', `subdomain ${tag}`, '555666');
    expect((await code(`from=github.com&subjectContains=${tag}`)).body.data.message.fromAddress).toBe(
      'alerts@mail.github.com',
    );
    expect((await code(`from=evil.example&subjectContains=display`)).body.data.code).toBe('111222');
    expect((await code(`from=noreply@github.co&subjectContains=${tag}`)).body.data).toMatchObject({ code: null });

    for (const bad of ['github', 'GitHub Sender', 'x@', '@@github.com']) {
      const res = await code(`from=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.errMsg).toMatch(/^from: must be a domain/);
    }
    const flag = await code('requireAuthenticated=yes');
    expect(flag.status).toBe(400);
  });
});
