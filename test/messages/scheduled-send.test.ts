import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock } from '../support/tenants.js';
import { rowsOf, sendBody, twoMailboxes } from '../delivery/helpers.js';
import { deliverToMx } from '../smtp/mx-peer.js';
import { mcpClient, ok } from '../mcp/helpers.js';
import { OutboxWorker } from '../../src/core/flows/outbound/outbox-worker.js';

// docs/workflow.md, "Scheduled sends". Time moves only with the injected clock; the test drives
// the outbox worker itself (runOnce), so nothing here waits for a due time.

let clock: ManualClock;
let server: TestServer;
const clients: Client[] = [];
const q = rowsOf(() => server);
const MINUTE = 60_000;

beforeAll(async () => {
  clock = new ManualClock();
  server = await startTestServer({
    roles: ['api', 'smtp'],
    clock,
    env: { SMTP_MX_PORT: '0', SMTP_SUBMISSION_PORT: '0', SEND_RATE_LIMIT_PER_MINUTE: '1000' },
  });
}, 180_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.close();
});

const worker = () =>
  new OutboxWorker(server.runtime.services, { pollIntervalMs: 50, leaseMs: 30_000, workerId: 'scheduled-test' });

/** Runs the worker until nothing is due at the clock's now. */
async function drain(): Promise<void> {
  const w = worker();
  while (await w.runOnce());
}

const copiesIn = async (mailboxId: string, subject: string) =>
  (
    await q`select count(*)::int as n from message where mailbox_id = ${mailboxId} and direction = 'inbound' and subject = ${subject}`
  )[0].n as number;

const detail = async (token: string, id: string) => (await server.api(token).get(`/api/messages/${id}`)).body.data;

describe('scheduled sends', () => {
  it('202 scheduled with sendAtTs; nothing leaves before sendAt, it leaves after; the detail follows', async () => {
    const { a, b } = await twoMailboxes(server);
    const sendAt = clock.now().getTime() + 10 * MINUTE;
    const request = () =>
      server.api(a.token).post('/api/messages/send', sendBody(b.address, { subject: 'later', sendAt }), {
        'Idempotency-Key': 'later-1',
      });
    const res = await request();
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.data).toMatchObject({ status: 'scheduled', sendAtTs: sendAt });
    const id = res.body.data.messageId;
    // A retry under the same Idempotency-Key gets the first answer, scheduled, and schedules nothing more.
    expect((await request()).body.data).toEqual(res.body.data);
    expect(await detail(a.token, id)).toMatchObject({
      status: 'scheduled',
      sendAtTs: sendAt,
      deliveryStatus: 'scheduled',
    });

    clock.advance(10 * MINUTE - 1);
    await drain();
    expect(await copiesIn(b.mailboxId, 'later')).toBe(0);
    expect((await detail(a.token, id)).status).toBe('scheduled');

    clock.advance(1);
    await drain();
    expect(await copiesIn(b.mailboxId, 'later')).toBe(1);
    expect(await detail(a.token, id)).toMatchObject({
      status: 'queued',
      sendAtTs: sendAt,
      deliveryStatus: 'delivered',
    });
    // Admitted once, when it left: the audit entry is written then.
    const audit = await q`select decision from audit_entry where message_id = ${id}`;
    expect(audit.map((r) => r.decision)).toEqual(['accepted']);
  });

  it('a sendAt not in the future sends at once; a bad sendAt is a 400', async () => {
    const { a, b } = await twoMailboxes(server);
    const now = await server
      .api(a.token)
      .post('/api/messages/send', sendBody(b.address, { sendAt: clock.now().getTime() }));
    expect(now.body.data.status).toBe('queued');
    expect(now.body.data.sendAtTs).toBeUndefined();
    for (const sendAt of ['tomorrow', 1.5, -1]) {
      const bad = await server.api(a.token).post('/api/messages/send', sendBody(b.address, { sendAt }));
      expect(bad.status).toBe(400);
    }
  });

  it('DELETE …/schedule cancels (idempotent); a cancelled one never leaves; one that left is a 409', async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const sendAt = clock.now().getTime() + MINUTE;
    const res = await server
      .api(a.token)
      .post('/api/messages/send', sendBody(b.address, { subject: 'cancel me', sendAt }));
    const id = res.body.data.messageId;
    // A domain token names the mailbox (query or body); it must be the message's mailbox.
    expect(
      (await server.api(domain.token).delete(`/api/messages/${id}/schedule?mailboxAddress=${b.address}`)).status,
    ).toBe(400);
    const first = await server.api(domain.token).delete(`/api/messages/${id}/schedule?mailboxAddress=${a.address}`);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toEqual({ messageId: id, status: 'cancelled', cancelled: true });
    const again = await server.api(a.token).delete(`/api/messages/${id}/schedule`);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ messageId: id, status: 'cancelled', cancelled: false });

    clock.advance(2 * MINUTE);
    await drain();
    expect(await copiesIn(b.mailboxId, 'cancel me')).toBe(0);
    expect(await detail(a.token, id)).toMatchObject({ status: 'cancelled', deliveryStatus: 'cancelled' });
    expect((await q`select status from outbox_job where message_id = ${id}`)[0].status).toBe('done');

    const sent = await server.api(a.token).post('/api/messages/send', sendBody(b.address));
    const late = await server.api(a.token).delete(`/api/messages/${sent.body.data.messageId}/schedule`);
    expect(late.status).toBe(409);
    expect((await server.api(b.token).delete(`/api/messages/${id}/schedule`)).status).toBe(404);
  });

  it('GET /api/messages?status=scheduled lists the sends still waiting, with sendAtTs; cancelled and sent ones leave', async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const soon = clock.now().getTime() + 5 * MINUTE;
    const later = clock.now().getTime() + 50 * MINUTE;
    const send = async (subject: string, sendAt?: number) =>
      (await server.api(a.token).post('/api/messages/send', sendBody(b.address, { subject, sendAt }))).body.data
        .messageId as string;
    const now = await send('at once');
    const first = await send('first later', soon);
    const second = await send('second later', later);
    const third = await send('third later', later);
    const list = async (query: string, token = a.token) => server.api(token).get(`/api/messages?${query}`);

    const res = await list('status=scheduled');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.items.map((m: any) => m.subject)).toEqual(['third later', 'second later', 'first later']);
    expect(res.body.data.totalCount).toBe(3);
    expect(res.body.data.items[2]).toMatchObject({ messageId: first, direction: 'outbound', sendAtTs: soon });
    // Every summary carries sendAtTs: null for mail sent at once and for received mail.
    await drain();
    const all = (await list('limit=200', a.token)).body.data.items;
    expect(all.find((m: any) => m.messageId === now).sendAtTs).toBeNull();
    const received = (await list('direction=inbound', b.token)).body.data.items;
    expect(received.find((m: any) => m.subject === 'at once').sendAtTs).toBeNull();
    // The same filter for a domain token naming the mailbox, and with direction=outbound.
    expect((await list(`status=scheduled&mailboxAddress=${a.address}`, domain.token)).body.data.totalCount).toBe(3);
    expect((await list('status=scheduled&direction=outbound')).body.data.totalCount).toBe(3);
    expect((await list('status=scheduled&direction=inbound')).body.data).toMatchObject({ items: [], totalCount: 0 });

    // Keyset-paged; the cursor is bound to the filter.
    const page = (await list('status=scheduled&limit=2')).body.data;
    expect(page.items).toHaveLength(2);
    const next = await list(`status=scheduled&limit=2&cursor=${encodeURIComponent(page.nextCursor)}`);
    expect(next.body.data.items.map((m: any) => m.messageId)).toEqual([first]);
    expect((await list(`limit=2&cursor=${encodeURIComponent(page.nextCursor)}`)).status).toBe(400);

    // One filter at a time; an unknown status is a 400 naming the field.
    const combined = await list('status=scheduled&approval=pending');
    expect(combined.status).toBe(400);
    expect(combined.body.errMsg).toBe('status: cannot be combined with approval or screening');
    const unknown = await list('status=queued');
    expect(unknown.status).toBe(400);
    expect(unknown.body.errMsg).toMatch(/^status: /);

    // Cancelled: it leaves the list at once, and a list's ETag taken before no longer matches (the
    // cancel is told as message.delivery `cancelled`); sent when due: it leaves too.
    const etag = (await list('status=scheduled')).headers.get('etag')!;
    expect((await server.api(a.token).get('/api/messages?status=scheduled', { 'If-None-Match': etag })).status).toBe(
      304,
    );
    expect((await server.api(a.token).delete(`/api/messages/${third}/schedule`)).status).toBe(200);
    expect((await server.api(a.token).get('/api/messages?status=scheduled', { 'If-None-Match': etag })).status).toBe(
      200,
    );
    const told = await q`select payload from mailbox_event where mailbox_id = ${a.mailboxId}
      and type = 'message.delivery' and payload->'data'->>'messageId' = ${third}`;
    expect(told.map((r) => r.payload.data)).toEqual([
      {
        messageId: third,
        recipient: b.address,
        recipientStatus: 'cancelled',
        deliveryStatus: 'cancelled',
        remoteReply: 'scheduled send cancelled',
        deliveredAtTs: null,
      },
    ]);
    // Cancelling again changes nothing and tells nothing.
    expect((await server.api(a.token).delete(`/api/messages/${third}/schedule`)).body.data.cancelled).toBe(false);
    expect(
      (
        await q`select count(*)::int as n from mailbox_event where payload->'data'->>'messageId' = ${third}
        and type = 'message.delivery'`
      )[0].n,
    ).toBe(1);
    expect((await list('status=scheduled')).body.data.items.map((m: any) => m.messageId)).toEqual([second, first]);
    clock.advance(5 * MINUTE);
    await drain();
    const left = (await list('status=scheduled')).body.data;
    expect(left.items.map((m: any) => m.messageId)).toEqual([second]);
    expect(left.totalCount).toBe(1);
    // It keeps its due time once it left, as the detail does.
    expect(
      (await list('direction=outbound&limit=200')).body.data.items.find((m: any) => m.messageId === first),
    ).toMatchObject({ sendAtTs: soon });
  });

  it('a job under a worker when cancelled is ended by the worker, and it never leaves', async () => {
    const { a, b } = await twoMailboxes(server);
    const sendAt = clock.now().getTime() + MINUTE;
    const res = await server.api(a.token).post('/api/messages/send', sendBody(b.address, { subject: 'raced', sendAt }));
    const id = res.body.data.messageId;
    // As if a worker had claimed it just before the cancel (its lease is live).
    await q`update outbox_job set lease_until = ${new Date(clock.now().getTime() + 1000)} where message_id = ${id}`;
    expect((await server.api(a.token).delete(`/api/messages/${id}/schedule`)).status).toBe(200);
    expect((await q`select status from outbox_job where message_id = ${id}`)[0].status).toBe('pending');
    clock.advance(2 * MINUTE);
    await drain();
    expect(await copiesIn(b.mailboxId, 'raced')).toBe(0);
    expect((await q`select status from outbox_job where message_id = ${id}`)[0].status).toBe('done');
  });

  it('cancelOnReply: an answer on port 25 in its thread cancels it; without the flag it still leaves', async () => {
    const { a } = await twoMailboxes(server);
    const first = await server.api(a.token).post('/api/messages/send', sendBody('carol@peer.example'));
    const [row] = await q`select internet_message_id from message where id = ${first.body.data.messageId}`;
    const sendAt = clock.now().getTime() + 60 * MINUTE;
    const reply = (cancelOnReply: boolean) =>
      server
        .api(a.token)
        .post(`/api/messages/${first.body.data.messageId}/reply`, { bodyText: 'Any news?', sendAt, cancelOnReply });
    const cancelling = (await reply(true)).body.data;
    const staying = (await reply(false)).body.data;
    expect(cancelling).toMatchObject({ status: 'scheduled', threadId: first.body.data.threadId });

    await deliverToMx(
      server.runtime.smtpPorts.mx!,
      { from: 'carol@peer.example', to: a.address },
      [
        'From: carol@peer.example',
        `To: ${a.address}`,
        'Subject: Re: Hello',
        'Message-ID: <answer-1@peer.example>',
        `In-Reply-To: ${row.internet_message_id}`,
        `References: ${row.internet_message_id}`,
        '',
        'Here is my answer.',
        '',
      ].join('\r\n'),
    );
    expect((await detail(a.token, cancelling.messageId)).status).toBe('cancelled');
    expect((await detail(a.token, staying.messageId)).status).toBe('scheduled');
    clock.advance(61 * MINUTE);
    await drain();
    expect((await detail(a.token, cancelling.messageId)).status).toBe('cancelled');
    expect((await detail(a.token, staying.messageId)).status).toBe('queued');
    const left = await q`select status from message_recipient where message_id = ${cancelling.messageId}`;
    expect(left.map((r) => r.status)).toEqual(['cancelled']);
  });

  it('policy is decided when it leaves: a rule added after scheduling refuses it, approval holds it', async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const sendAt = clock.now().getTime() + MINUTE;
    const external = await server
      .api(a.token)
      .post('/api/messages/send', sendBody('dave@peer.example', { subject: 'refused later', sendAt }));
    expect(external.body.data.status).toBe('scheduled');
    const local = await server
      .api(a.token)
      .post('/api/messages/send', sendBody(b.address, { subject: 'held later', sendAt }));
    const policy = await server
      .api(domain.token)
      .put(`/api/domain/mailboxes/${a.mailboxId}/policy`, { externalSending: false, approval: 'all' });
    expect(policy.status, JSON.stringify(policy.body)).toBe(200);

    clock.advance(MINUTE);
    await drain();
    const refused = await detail(a.token, external.body.data.messageId);
    expect(refused.deliveryStatus).toBe('failed');
    expect(refused.deliveries[0]).toMatchObject({ status: 'failed' });
    const held = await detail(a.token, local.body.data.messageId);
    expect(held).toMatchObject({ status: 'pending_approval', deliveryStatus: 'held', approvalStatus: 'pending' });
    expect(await copiesIn(b.mailboxId, 'held later')).toBe(0);
    const decisions = await q`select decision from audit_entry where message_id = any(${[
      external.body.data.messageId,
      local.body.data.messageId,
    ]}::text[]) or (mailbox_id = ${a.mailboxId} and decision = 'refused')`;
    expect(decisions.map((r) => r.decision).sort()).toEqual(['held', 'refused']);

    // Still held while the approval is pending, however late; approving lets it go.
    clock.advance(10 * MINUTE);
    await drain();
    expect(await copiesIn(b.mailboxId, 'held later')).toBe(0);
    const approve = await server
      .api(domain.token)
      .post(`/api/messages/${local.body.data.messageId}/approve?mailboxAddress=${a.address}`, {});
    expect(approve.status, JSON.stringify(approve.body)).toBe(200);
    await drain();
    expect(await copiesIn(b.mailboxId, 'held later')).toBe(1);
  });

  it('a scheduled send held when due gets the whole APPROVAL_TTL from its sendAt, not from its scheduling', async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const ttl = server.runtime.services.config.APPROVAL_TTL;
    const policy = await server
      .api(domain.token)
      .put(`/api/domain/mailboxes/${a.mailboxId}/policy`, { approval: 'all' });
    expect(policy.status).toBe(200);
    // Due two TTLs from now: a hold counted from scheduling would be expired the moment it began.
    const sendAt = clock.now().getTime() + 2 * ttl;
    const sent = await server
      .api(a.token)
      .post('/api/messages/send', sendBody(b.address, { subject: 'ttl later', sendAt }));
    const id = sent.body.data.messageId as string;
    clock.advance(2 * ttl);
    await drain();
    expect(await detail(a.token, id)).toMatchObject({ status: 'pending_approval', approvalStatus: 'pending' });
    const approvals = server.runtime.services.approvals;
    clock.advance(ttl - MINUTE);
    await approvals.expireDue();
    expect((await detail(a.token, id)).approvalStatus).toBe('pending');
    clock.advance(2 * MINUTE);
    await approvals.expireDue();
    expect((await detail(a.token, id)).approvalStatus).toBe('expired');
  });

  it('MCP send_mail and reply_message take sendAt; get_message shows status and sendAtTs', async () => {
    const { a, b } = await twoMailboxes(server);
    const client = await mcpClient(server, a.token);
    clients.push(client);
    const sendAt = clock.now().getTime() + 5 * MINUTE;
    const sent = await ok(client, 'send_mail', { toAddress: b.address, subject: 'mcp later', bodyText: 'x', sendAt });
    expect(sent).toMatchObject({ status: 'scheduled', sendAtTs: sendAt });
    const replied = await ok(client, 'reply_message', { messageId: sent.messageId, bodyText: 'y', sendAt });
    expect(replied).toMatchObject({ status: 'scheduled', sendAtTs: sendAt });
    expect(await ok(client, 'get_message', { messageId: sent.messageId })).toMatchObject({
      status: 'scheduled',
      sendAtTs: sendAt,
    });
    await drain();
    expect(await copiesIn(b.mailboxId, 'mcp later')).toBe(0);
    clock.advance(5 * MINUTE);
    await drain();
    expect(await copiesIn(b.mailboxId, 'mcp later')).toBe(1);
  });
});
