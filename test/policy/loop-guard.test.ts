import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody } from '../delivery/helpers.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { mxPort, startSmtpTestServer } from '../smtp/world.js';
import { deliverToMx } from '../smtp/mx-peer.js';
import { rfc5322 } from '../smtp/smtp-wire.js';
import { fails, mcpClient } from '../mcp/helpers.js';
import { composeMessage } from '../../src/core/state/mail/compose.js';

// The loop guard (docs/contract.md "Outbound policy"; RFC 3834): agent mail is marked auto-generated, and a
// reply to an automatic answer or bulk mail is refused on every channel that replies.

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let agent: { mailboxId: string; address: string; token: string };
let domain: { name: string; token: string };
const q = rowsOf(() => server);

/** Mail from outside, received on port 25 with the given extra header lines and envelope sender. */
async function receive(headers: string[], from = 'peer@remote.example'): Promise<string> {
  const subject = `in-${Math.random().toString(36).slice(2)}`;
  await deliverToMx(
    mxPort(server),
    { from, to: agent.address },
    rfc5322({ from: 'peer@remote.example', to: agent.address, subject, headers }),
  );
  const [row] = await q`select id from message where mailbox_id = ${agent.mailboxId} and subject = ${subject}`;
  return row.id;
}

beforeAll(async () => {
  dns = await startDnsStub({});
  server = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server } });
  const d = await server.createDomain();
  domain = { name: d.name, token: d.token };
  agent = await server.createMailbox(d.token, `agent@${d.name}`, 'Agent');
}, 180_000);
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

describe('loop guard', () => {
  it.each([
    ['Auto-Submitted: auto-replied', 'Auto-Submitted: auto-replied'],
    ['Auto-Submitted: auto-notified', 'Auto-Submitted: auto-notified'],
    ['Precedence: bulk', 'Precedence: bulk'],
    ['List-Id: <news.remote.example>', 'List-Id'],
  ])('refuses a reply to mail with %s (HTTP and MCP, 403 naming the rule)', async (header, named) => {
    const id = await receive([header]);
    const http = await server.api(agent.token).post(`/api/messages/${id}/reply`, { bodyText: 'Thanks!' });
    expect(http.status).toBe(403);
    expect(http.body.errMsg).toContain('autoReplyGuard');
    expect(http.body.errMsg).toContain(named);
    const client = await mcpClient(server, agent.token, { listTools: false });
    const err = await fails(client, 'reply_message', { messageId: id, bodyText: 'Thanks!' });
    expect(err.code).toBe(403);
    await client.close();
  });

  it('allows a reply to ordinary and auto-generated mail, and marks agent mail auto-generated', async () => {
    const plain = await receive([]);
    const generated = await receive(['Auto-Submitted: auto-generated']);
    for (const id of [plain, generated]) {
      const res = await server.api(agent.token).post(`/api/messages/${id}/reply`, { bodyText: 'Hi' });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      const [row] = await q`select auto_submitted from message where id = ${res.body.data.messageId}`;
      expect(row.auto_submitted).toBe('auto-generated');
    }
    const raw = await composeMessage(
      {
        from: { address: agent.address, name: '' },
        to: ['x@remote.example'],
        cc: [],
        subject: 's',
        text: 'b',
        html: null,
        messageId: null,
        inReplyTo: null,
        references: [],
        date: new Date(),
        attachments: [],
        autoSubmitted: 'auto-generated',
      },
      server.runtime.services.blobs,
    );
    expect(raw.toString()).toMatch(/^Auto-Submitted: auto-generated\r$/m);
  });

  it('is configurable per mailbox: with autoReplyGuard off the reply goes and carries no Auto-Submitted', async () => {
    await server.api(domain.token).put(`/api/domain/mailboxes/${agent.mailboxId}/policy`, { autoReplyGuard: false });
    const id = await receive(['Auto-Submitted: auto-replied']);
    const res = await server.api(agent.token).post(`/api/messages/${id}/reply`, { bodyText: 'Hi' });
    expect(res.status).toBe(202);
    const [row] = await q`select auto_submitted from message where id = ${res.body.data.messageId}`;
    expect(row.auto_submitted).toBeNull();
    await server.api(domain.token).put(`/api/domain/mailboxes/${agent.mailboxId}/policy`, {});
  });

  it('the per-counterparty reply budget answers 429 with Retry-After, and a plain send is not a reply', async () => {
    const limit = server.runtime.services.config.AUTO_REPLY_LIMIT_PER_HOUR;
    const id = await receive([], 'budget@remote.example');
    for (let i = 0; i < limit; i++) {
      const ok = await server
        .api(agent.token)
        .post(`/api/messages/${id}/reply`, { bodyText: `r${i}`, toAddress: 'budget@remote.example' });
      expect(ok.status).toBe(202);
    }
    const over = await server
      .api(agent.token)
      .post(`/api/messages/${id}/reply`, { bodyText: 'one more', toAddress: 'budget@remote.example' });
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(3000);
    expect((await server.api(agent.token).post('/api/messages/send', sendBody('budget@remote.example'))).status).toBe(
      202,
    );
  });
});
