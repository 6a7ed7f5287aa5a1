import path from 'node:path';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deliverToMx } from '../smtp/mx-peer.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';
import { mcpClient, ok } from '../mcp/helpers.js';
import { loadCorpus, SCREENING_DIR, type CorpusMail } from '../../bench/screening/corpus.js';
import { recordFigure, zeroFigure } from './support/figures.js';
import { scale } from './support/scale.js';

// Inbound screening under its hold (docs/screening.md): the screening corpus delivered on port 25
// to a mailbox with inboundScreening.holdAtScore 0.5. Figures: held mail seen by any agent read
// (list, search, thread, wait, verification code, MCP) must be 0; the share of hostile mail held
// and of ordinary mail held are the corpus figures measured end to end.

const SUITE = 'inbound screening';
let server: TestServer;
let bob: Awaited<ReturnType<TestServer['createMailbox']>>;
let agent: Client;
const q = rowsOf(() => server);

async function raw(mail: CorpusMail, to: string, tag: string): Promise<Buffer> {
  const composer = new MailComposer({
    from: mail.name ? { name: mail.name, address: mail.from } : mail.from,
    to,
    subject: `${mail.subject} [${tag}]`,
    text: mail.text,
    html: mail.html,
  });
  return composer.compile().build();
}

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'smtp', 'worker'],
    env: { SMTP_MX_PORT: '0', SMTP_SUBMISSION_PORT: '0' },
  });
  const domain = await server.createDomain();
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
  const res = await server
    .api(domain.token)
    .put(`/api/domain/mailboxes/${bob.mailboxId}/policy`, { inboundScreening: { holdAtScore: 0.5 } });
  expect(res.status).toBe(200);
  // The correspondents of the corpus's context (context.yaml), as if the mailbox had written to them.
  const { context } = loadCorpus(SCREENING_DIR(path.resolve(import.meta.dirname, '../..')));
  for (const d of context.knownDomains)
    await q`insert into mailbox_contact (mailbox_id, address, created_at) values (${bob.mailboxId}, ${`someone@${d}`}, now())`;
  agent = await mcpClient(server, bob.token);
}, 180_000);
afterAll(async () => {
  await agent?.close();
  await server?.close();
});

describe('injected mail held from the agent', () => {
  it('no held message reaches an agent read; the corpus is held as the unit figures say', async () => {
    const { hostile, ordinary } = loadCorpus(SCREENING_DIR(path.resolve(import.meta.dirname, '../..')));
    const take = scale(12, hostile.length);
    const mails = [
      ...hostile.slice(0, take).map((m) => ({ m, hostile: true })),
      ...ordinary.slice(0, take).map((m) => ({ m, hostile: false })),
    ];
    for (const [i, { m }] of mails.entries())
      await deliverToMx(
        server.runtime.smtpPorts.mx!,
        { from: m.from, to: bob.address },
        await raw(m, bob.address, `r${i}`),
      );
    const tagOf = (subject: string) => Number(/\[r(\d+)\]$/.exec(subject)![1]);
    const stored = await waitFor(async () => {
      const rows = await q`select id, subject, screening_held, search_vector is not null as indexed from message
        where mailbox_id = ${bob.mailboxId} and direction = 'inbound'`;
      return rows.length === mails.length && rows.every((r) => r.indexed) ? rows : null;
    }, 60_000);
    for (const r of await q`select subject, screening, screening_held from message where mailbox_id = ${bob.mailboxId}`)
      if (r.screening_held !== mails[tagOf(r.subject)]!.hostile)
        console.log('[miss]', r.subject, JSON.stringify(r.screening));
    const heldIds = new Set(stored.filter((r) => r.screening_held).map((r) => r.id as string));
    const heldHostile = stored.filter((r) => r.screening_held && mails[tagOf(r.subject)]!.hostile).length;
    const heldOrdinary = stored.filter((r) => r.screening_held && !mails[tagOf(r.subject)]!.hostile).length;

    // Every agent read, each asked for everything it can return.
    const seen = new Set<string>();
    const api = server.api(bob.token);
    for (const m of (await api.get('/api/messages?limit=200')).body.data.items) seen.add(m.messageId);
    for (const m of (await api.get('/api/messages/search?q=r&limit=200')).body.data.items) seen.add(m.messageId);
    for (const id of heldIds) {
      if ((await api.get(`/api/messages/${id}`)).status === 200) seen.add(id);
      const [row] = await q`select thread_id from message where id = ${id}`;
      const thread = await api.get(`/api/threads/${row.thread_id}`);
      for (const m of thread.body.data?.messages ?? []) seen.add(m.messageId);
    }
    let since = '0';
    for (;;) {
      const w = (await api.get(`/api/messages/wait?sinceEventId=${since}&timeoutMs=0`)).body.data;
      if (w.timedOut) break;
      seen.add(w.message.messageId);
      since = w.eventId;
    }
    const code = (await api.get('/api/messages/verification-code?timeoutMs=0')).body.data;
    if (code.message) seen.add(code.message.messageId);
    for (const m of (await ok(agent, 'list_messages', { limit: 200 })).items) seen.add(m.messageId);
    for (const m of (await ok(agent, 'search_messages', { q: 'r', limit: 200 })).items) seen.add(m.messageId);
    const mcpCode = await ok(agent, 'get_verification_code', { timeoutMs: 0 });
    if (mcpCode.message) seen.add(mcpCode.message.messageId);

    const leaked = [...heldIds].filter((id) => seen.has(id)).length;
    zeroFigure(SUITE, "injected mail held from the agent's reads: held messages an agent read returned", leaked);
    const hostileShare = heldHostile / take;
    recordFigure({
      suite: SUITE,
      name: `hostile corpus mail held (of ${take}, port 25, holdAtScore 0.5)`,
      value: hostileShare.toFixed(3),
      target: '≥ 0.85',
      pass: hostileShare >= 0.85,
    });
    recordFigure({
      suite: SUITE,
      name: `ordinary corpus mail held (of ${take})`,
      value: heldOrdinary,
      target: '≤ 1',
      pass: heldOrdinary <= 1,
    });
    expect(leaked).toBe(0);
    expect(heldIds.size).toBeGreaterThan(0);
    expect(hostileShare).toBeGreaterThanOrEqual(0.85);
    expect(heldOrdinary).toBeLessThanOrEqual(1);
  }, 180_000);
});
