import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mailboxTokenWith, rowsOf, sendBody, twoMailboxes } from './helpers.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});
const q = rowsOf(() => server);

describe('POST /api/messages/send', () => {
  it('answers 202 queued and writes message, thread, recipients, outbox job, counter and event in one go', async () => {
    const { a } = await twoMailboxes(server);
    const before = Date.now();
    const res = await server.api(a.token).post('/api/messages/send', {
      toAddress: 'Carol@External.example',
      ccAddresses: ['dave@external.example'],
      bccAddresses: ['eve@external.example'],
      subject: 'Quarterly report',
      bodyText: 'See attached.',
      bodyHtml: '<p>See attached.</p>',
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ code: 202, msg: 'Accepted', errMsg: null });
    const d = res.body.data;
    expect(d).toEqual({
      messageId: expect.stringMatching(/^msg_/),
      threadId: expect.stringMatching(/^thr_/),
      status: 'queued',
      queuedAtTs: expect.any(Number),
    });
    expect(d.queuedAtTs).toBeGreaterThanOrEqual(before - 5);

    const [msg] = await q`select * from message where id = ${d.messageId}`;
    expect(msg).toMatchObject({
      mailbox_id: a.mailboxId,
      thread_id: d.threadId,
      direction: 'outbound',
      subject: 'Quarterly report',
      from_address: a.address,
      from_display_name: 'Alice',
      to_addresses: ['carol@external.example'],
      cc_addresses: ['dave@external.example'],
      bcc_addresses: ['eve@external.example'],
      mailbox_address: a.address,
      body_format: 'text+html',
      delivery_status: 'queued',
      attachment_count: 0,
      in_reply_to_message_id: null,
      is_read: true,
    });
    expect(msg.internet_message_id).toBe(`<${d.messageId}@${a.address.split('@')[1]}>`);
    expect(new Date(msg.sent_at).getTime()).toBe(d.queuedAtTs);
    expect(new Date(msg.created_at).getTime()).toBe(d.queuedAtTs);

    const recipients =
      await q`select address, kind, status from message_recipient where message_id = ${d.messageId} order by kind`;
    expect(recipients).toEqual([
      { address: 'eve@external.example', kind: 'bcc', status: 'queued' },
      { address: 'dave@external.example', kind: 'cc', status: 'queued' },
      { address: 'carol@external.example', kind: 'to', status: 'queued' },
    ]);
    const [job] =
      await q`select status, mailbox_id, run_after, trace_context from outbox_job where message_id = ${d.messageId}`;
    expect(job).toMatchObject({ status: 'pending', mailbox_id: a.mailboxId });
    expect(job.trace_context).toMatch(new RegExp(`^00-${res.body.tid}-[0-9a-f]{16}-0[01]$`));
    const [thread] = await q`select subject, mailbox_id from thread where id = ${d.threadId}`;
    expect(thread).toEqual({ subject: 'Quarterly report', mailbox_id: a.mailboxId });
    const [mailbox] = await q`select outbound_count, inbound_count from mailbox where id = ${a.mailboxId}`;
    expect(Number(mailbox.outbound_count)).toBe(1);
    const events = await q`select type, payload from mailbox_event where mailbox_id = ${a.mailboxId} order by seq`;
    expect(events.map((e) => e.type)).toEqual(['message.sent']);
    expect(events[0].payload).toMatchObject({
      type: 'message.sent',
      mailboxAddress: a.address,
      data: { messageId: d.messageId, threadId: d.threadId },
    });
  });

  it('accepts toAddress as one address or as a list', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const one = await api.post('/api/messages/send', sendBody('x@external.example'));
    const list = await api.post(
      '/api/messages/send',
      sendBody(['x@external.example', 'y@external.example', 'X@external.example']),
    );
    expect(one.status).toBe(202);
    expect(list.status).toBe(202);
    const rows =
      await q`select id, to_addresses from message where id = any(${[one.body.data.messageId, list.body.data.messageId]}::text[]) order by id`;
    expect(rows.map((r) => r.to_addresses)).toEqual([
      ['x@external.example'],
      ['x@external.example', 'y@external.example'],
    ]);
  });

  it('refuses invalid requests with 400 and writes nothing', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const cases: [unknown, RegExp][] = [
      [sendBody('not-an-address'), /toAddress/],
      [sendBody([]), /toAddress/],
      [{ subject: 'x', bodyText: 'y' }, /toAddress/],
      [sendBody('a@external.example', { ccAddresses: ['bad@'] }), /ccAddresses/],
      [sendBody('a@external.example', { bccAddresses: 'b@external.example' }), /bccAddresses/],
      [{ toAddress: 'a@external.example', subject: 'no body' }, /bodyText/],
      [sendBody('a@external.example', { bodyText: 'x'.repeat(1_048_577) }), /./],
      [sendBody('a@external.example', { subject: 's'.repeat(999) }), /subject/],
      [sendBody('a@external.example', { attachmentIds: 'att_1' }), /attachmentIds/],
      [sendBody('a@external.example', { surprise: true }), /surprise|Unrecognized/i],
      [sendBody('a@external.example', { mailboxAddress: 'not an address' }), /mailboxAddress/],
    ];
    for (const [body, message] of cases) {
      const res = await api.post('/api/messages/send', body);
      expect(res.status, JSON.stringify(body).slice(0, 100)).toBe(res.status === 413 ? 413 : 400);
      expect(res.body).toMatchObject({ data: null, code: res.status });
      if (res.status === 400) expect(res.body.errMsg).toMatch(message);
    }
    const rows = await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId}`;
    expect(rows[0].n).toBe(0);
  });

  it('folds CR/LF in the subject so no header can be injected', async () => {
    const { a } = await twoMailboxes(server);
    const res = await server
      .api(a.token)
      .post('/api/messages/send', sendBody('x@external.example', { subject: 'Hi\r\nBcc: victim@example.com' }));
    expect(res.status).toBe(202);
    const [row] = await q`select subject from message where id = ${res.body.data.messageId}`;
    expect(row.subject).toBe('Hi Bcc: victim@example.com');
  });

  it('needs MailboxSend (403)', async () => {
    const { a } = await twoMailboxes(server);
    const readOnly = await mailboxTokenWith(server, a.mailboxId, ['MailboxRead']);
    const res = await server.api(readOnly).post('/api/messages/send', sendBody('x@external.example'));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ data: null, code: 403 });
    const noToken = await server.api().post('/api/messages/send', sendBody('x@external.example'));
    expect(noToken.status).toBe(401);
  });

  it('applies the token table: domain token needs mailboxAddress, a mailbox token may not name another mailbox', async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const missing = await server.api(domain.token).post('/api/messages/send', sendBody('x@external.example'));
    expect(missing.status).toBe(400);
    expect(missing.body.errMsg).toMatch(/mailboxAddress/);
    const other = await server
      .api(a.token)
      .post('/api/messages/send', sendBody('x@external.example', { mailboxAddress: b.address }));
    expect(other.status).toBe(400);
    const own = await server
      .api(a.token)
      .post('/api/messages/send', sendBody('x@external.example', { mailboxAddress: a.address.toUpperCase() }));
    expect(own.status).toBe(202);
    const byDomain = await server
      .api(domain.token)
      .post('/api/messages/send', sendBody('x@external.example', { mailboxAddress: b.address }));
    expect(byDomain.status).toBe(202);
    const [row] = await q`select mailbox_id, from_address from message where id = ${byDomain.body.data.messageId}`;
    expect(row).toEqual({ mailbox_id: b.mailboxId, from_address: b.address });
    const foreign = await server.createDomain();
    const cross = await server
      .api(foreign.token)
      .post('/api/messages/send', sendBody('x@external.example', { mailboxAddress: a.address }));
    expect(cross.status).toBe(404);
  });
});
