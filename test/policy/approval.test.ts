import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock } from '../support/tenants.js';
import { rowsOf, sendBody, twoMailboxes, waitFor } from '../delivery/helpers.js';
import { call, fails, mcpClient, ok, textOf } from '../mcp/helpers.js';

// The approval gate (docs/contract.md "Outbound policy"; docs/api.md "Approval gate") end to end on one
// server with the worker: held → listed → approved (delivered once) / rejected / expired.

let server: TestServer;
let clock: ManualClock;
let world: Awaited<ReturnType<typeof twoMailboxes>>;
const q = rowsOf(() => server);

/** A mailbox token with `scopes` through the real domain token route (so MailboxApprove is granted by a human). */
async function domainGrantedToken(mailboxId: string, scopes: string[]): Promise<{ token: string; tokenId: string }> {
  const res = await server
    .api(world.domain.token)
    .post(`/api/domain/mailboxes/${mailboxId}/access-tokens`, { tokenName: 'approver', scopes });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { token: res.body.data.accessToken, tokenId: res.body.data.tokenId };
}

async function setPolicy(mailboxId: string, policy: Record<string, unknown>) {
  const res = await server.api(world.domain.token).put(`/api/domain/mailboxes/${mailboxId}/policy`, policy);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

async function held(to: string): Promise<string> {
  const res = await server.api(world.a.token).post('/api/messages/send', sendBody(to));
  expect(res.status).toBe(202);
  expect(res.body.data.status).toBe('pending_approval');
  return res.body.data.messageId;
}

beforeAll(async () => {
  clock = new ManualClock();
  server = await startTestServer({ roles: ['api', 'worker'], clock, env: { WORKER_POLL_INTERVAL: '50ms' } });
  world = await twoMailboxes(server);
  await setPolicy(world.a.mailboxId, { approval: 'all' });
}, 180_000);
afterAll(() => server?.close());

describe('approval gate', () => {
  it('holds a message in a state of its own: no outbox job, listed by approval=pending, event and audit', async () => {
    const id = await held(world.b.address);
    expect(await q`select * from outbox_job where message_id = ${id}`).toHaveLength(0);
    const [row] = await q`select approval_status, delivery_status from message where id = ${id}`;
    expect(row).toEqual({ approval_status: 'pending', delivery_status: 'held' });
    const list = await server.api(world.a.token).get('/api/messages?approval=pending');
    expect(list.body.data.items.map((m: any) => m.messageId)).toContain(id);
    expect(list.body.data.items.every((m: any) => m.approvalStatus === 'pending')).toBe(true);
    expect(list.body.data.totalCount).toBe(list.body.data.items.length);
    const events = await server.api(world.a.token).get('/api/events');
    expect(
      events.body.data.items.some((e: any) => e.type === 'message.approval-required' && e.data.messageId === id),
    ).toBe(true);
    const audit = await server.api(world.a.token).get('/api/mailbox/audit');
    expect(audit.body.data.items[0]).toMatchObject({
      decision: 'held',
      rule: 'approval:all',
      messageId: id,
      channel: 'http',
    });
  });

  it('the sending token (default integration scopes) cannot approve its own mail, on HTTP or MCP', async () => {
    const id = await held(world.b.address);
    const http = await server.api(world.a.token).post(`/api/messages/${id}/approve`);
    expect(http.status).toBe(403);
    const agent = await mcpClient(server, world.a.token);
    const err = await fails(agent, 'decide_approval', { messageId: id, decision: 'approve' });
    expect(err.code).toBe(403);
    expect(err.errMsg).toContain('MailboxApprove');
    await agent.close();
    expect((await q`select approval_status from message where id = ${id}`)[0].approval_status).toBe('pending');
  });

  it('approve with MailboxApprove: queued in the approving transaction, delivered once, idempotent, first decision wins', async () => {
    const id = await held(world.b.address);
    const approver = await domainGrantedToken(world.a.mailboxId, ['MailboxRead', 'MailboxApprove']);
    const first = await server.api(approver.token).post(`/api/messages/${id}/approve`, { reason: 'looks fine' });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({
      approvalStatus: 'approved',
      changed: true,
      decidedByTokenId: approver.tokenId,
    });
    const again = await server.api(approver.token).post(`/api/messages/${id}/approve`);
    expect(again.status).toBe(200);
    expect(again.body.data.changed).toBe(false);
    const reject = await server.api(approver.token).post(`/api/messages/${id}/reject`);
    expect(reject.status).toBe(409);
    expect(reject.body.errMsg).toContain('already approved');
    await waitFor(
      async () =>
        (await q`select 1 from message where mailbox_id = ${world.b.mailboxId} and subject = 'Hello'`).length > 0,
      15_000,
      'local delivery',
    );
    await waitFor(async () => (await q`select status from outbox_job where message_id = ${id}`)[0]?.status === 'done');
    const copies = await q`select m.id from message m join message mo on mo.internet_message_id = m.internet_message_id
      where mo.id = ${id} and m.mailbox_id = ${world.b.mailboxId}`;
    expect(copies).toHaveLength(1);
    const decisions = (await server.api(world.a.token).get('/api/mailbox/audit')).body.data.items.filter(
      (e: any) => e.messageId === id,
    );
    // The manual clock stands still here, so both entries share one instant: compare as a set.
    expect(decisions.map((e: any) => e.decision).sort()).toEqual(['approved', 'held']);
    expect(JSON.stringify(decisions)).not.toContain(approver.token);
  });

  it('reject: never leaves; MCP decide_approval with MailboxApprove; list_pending_approvals', async () => {
    const id = await held(world.b.address);
    const approver = await domainGrantedToken(world.a.mailboxId, ['MailboxRead', 'MailboxApprove']);
    const client: Client = await mcpClient(server, approver.token);
    const pending = await ok(client, 'list_pending_approvals', {});
    expect(pending.items.map((m: any) => m.messageId)).toContain(id);
    const result = await ok(client, 'decide_approval', { messageId: id, decision: 'reject', reason: 'no' });
    expect(result).toMatchObject({ approvalStatus: 'rejected', deliveryStatus: 'failed' });
    const detail = await server.api(world.a.token).get(`/api/messages/${id}`);
    expect(detail.body.data.deliveryStatus).toBe('failed');
    expect(detail.body.data.deliveries[0]).toMatchObject({ status: 'failed', remoteReply: 'rejected by approver' });
    expect(await q`select * from outbox_job where message_id = ${id}`).toHaveLength(0);
    const text = textOf(await call(client, 'decide_approval', { messageId: id, decision: 'approve' }));
    expect(JSON.parse(text).code).toBe(409);
    await client.close();
  });

  it('a domain token with DomainManage decides for its mailboxes; another domain sees 404', async () => {
    const id = await held(world.b.address);
    const foreign = await server.createDomain();
    expect((await server.api(foreign.token).post(`/api/messages/${id}/approve`)).status).toBe(404);
    const res = await server.api(world.domain.token).post(`/api/messages/${id}/reject`);
    expect(res.status).toBe(200);
    expect(res.body.data.approvalStatus).toBe('rejected');
  });

  it('a token never decides its own held send, whatever its scopes: 403 APPROVAL_SELF_FORBIDDEN, audited', async () => {
    // The attack: an agent whose token holds MailboxApprove (granted by mistake, or a wider token
    // handed out) sends to an outside address and approves it itself.
    const wide = await domainGrantedToken(world.a.mailboxId, [
      'MailboxRead',
      'MailboxSend',
      'MailboxApprove',
      'TokenManage',
    ]);
    const send = await server.api(wide.token).post('/api/messages/send', sendBody('drop@evil.example'));
    expect(send.body.data.status).toBe('pending_approval');
    const id = send.body.data.messageId as string;
    const http = await server.api(wide.token).post(`/api/messages/${id}/approve`);
    expect(http.status).toBe(403);
    expect(http.body).toMatchObject({ errorCode: 'APPROVAL_SELF_FORBIDDEN' });
    expect((await server.api(wide.token).post(`/api/messages/${id}/reject`)).body.errorCode).toBe(
      'APPROVAL_SELF_FORBIDDEN',
    );
    const agent = await mcpClient(server, wide.token);
    const err = await fails(agent, 'decide_approval', { messageId: id, decision: 'approve' });
    expect(err).toMatchObject({ code: 403, errorCode: 'APPROVAL_SELF_FORBIDDEN' });
    // A token the sender mints is the same actor.
    const child = await server
      .api(wide.token)
      .post('/api/mailbox/access-tokens', { tokenName: 'child', scopes: ['MailboxApprove'] });
    expect(child.status).toBe(201);
    const byChild = await server.api(child.body.data.accessToken).post(`/api/messages/${id}/approve`);
    expect(byChild.body.errorCode).toBe('APPROVAL_SELF_FORBIDDEN');
    await agent.close();
    expect((await q`select approval_status from message where id = ${id}`)[0].approval_status).toBe('pending');
    const refused = await q`select token_id, channel, rule from audit_entry
      where message_id = ${id} and decision = 'refused'`;
    expect(refused.map((r) => [r.token_id, r.channel, r.rule]).sort()).toEqual(
      [
        [wide.tokenId, 'http', 'approval:self'],
        [wide.tokenId, 'http', 'approval:self'],
        [wide.tokenId, 'mcp', 'approval:self'],
        [child.body.data.tokenId, 'http', 'approval:self'],
      ].sort(),
    );
    // Another approver (a human's token) decides it.
    const human = await domainGrantedToken(world.a.mailboxId, ['MailboxApprove']);
    expect((await server.api(human.token).post(`/api/messages/${id}/reject`)).status).toBe(200);
  });

  it('a domain token may name the mailbox (body or query) on approve and reject; another mailbox is 400', async () => {
    const id = await held(world.b.address);
    const other = await held(world.b.address);
    const domain = server.api(world.domain.token);
    const inBody = await domain.post(`/api/messages/${id}/approve`, { mailboxAddress: world.a.address, reason: 'ok' });
    expect(inBody.status, JSON.stringify(inBody.body)).toBe(200);
    const inQuery = await domain.post(`/api/messages/${other}/reject?mailboxAddress=${world.a.address}`);
    expect(inQuery.status, JSON.stringify(inQuery.body)).toBe(200);

    const third = await held(world.b.address);
    const wrong = await domain.post(`/api/messages/${third}/approve`, { mailboxAddress: world.b.address });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errorCode).toBe('TARGET_MAILBOX_MISMATCH');
    const wrongQuery = await domain.post(`/api/messages/${third}/reject?mailboxAddress=${world.b.address}`);
    expect(wrongQuery.body.errorCode).toBe('TARGET_MAILBOX_MISMATCH');
    const disagree = await domain.post(`/api/messages/${third}/approve?mailboxAddress=${world.a.address}`, {
      mailboxAddress: world.b.address,
    });
    expect(disagree.status).toBe(400);
    expect((await domain.post(`/api/messages/${third}/approve`, { mailboxAddress: 'not an address' })).status).toBe(
      400,
    );
    expect(
      (
        await domain.post(`/api/messages/${third}/approve`, {
          mailboxAddress: `nobody@${world.a.address.split('@')[1]}`,
        })
      ).status,
    ).toBe(404);
    expect((await q`select approval_status from message where id = ${third}`)[0].approval_status).toBe('pending');
    const mcp = await mcpClient(server, world.domain.token);
    expect(
      (await fails(mcp, 'decide_approval', { messageId: third, decision: 'approve', mailboxAddress: world.b.address }))
        .errorCode,
    ).toBe('TARGET_MAILBOX_MISMATCH');
    expect(
      (await ok(mcp, 'decide_approval', { messageId: third, decision: 'reject', mailboxAddress: world.a.address }))
        .approvalStatus,
    ).toBe('rejected');
    await mcp.close();

    // The same rule on the other writes a domain token makes on one message.
    const msg = (await server.api(world.a.token).get('/api/messages?limit=1')).body.data.items[0].messageId as string;
    const readState = await domain.put(`/api/messages/${msg}/read-state?mailboxAddress=${world.a.address}`, {
      isRead: true,
    });
    expect(readState.status, JSON.stringify(readState.body)).toBe(200);
    const readWrong = await domain.put(`/api/messages/${msg}/read-state`, {
      isRead: true,
      mailboxAddress: world.b.address,
    });
    expect(readWrong.body.errorCode).toBe('TARGET_MAILBOX_MISMATCH');
    const delWrong = await domain.delete(`/api/messages/${msg}?mailboxAddress=${world.b.address}`);
    expect(delWrong.body.errorCode).toBe('TARGET_MAILBOX_MISMATCH');
  });

  it('expires as rejected after APPROVAL_TTL (the sweeper), with message.rejected and an audit entry', async () => {
    const id = await held(world.b.address);
    clock.advance(72 * 3_600_000 + 1000);
    // This call or the worker role's own sweeper (same clock) expires it: expire's SKIP LOCKED
    // leaves a row the other holds to it, so the status is waited for rather than read once.
    await server.runtime.services.approvals.expireDue();
    const status = async () => (await q`select approval_status from message where id = ${id}`)[0].approval_status;
    await waitFor(async () => (await status()) === 'expired', 10_000, 'the hold expired');
    const events = (await server.api(world.a.token).get('/api/events')).body.data.items;
    expect(
      events.some(
        (e: any) => e.type === 'message.rejected' && e.data.messageId === id && e.data.approvalStatus === 'expired',
      ),
    ).toBe(true);
    const audit = (await server.api(world.domain.token).get('/api/domain/audit')).body.data.items;
    expect(audit.find((e: any) => e.messageId === id && e.decision === 'expired')).toMatchObject({
      tokenId: null,
      channel: 'worker',
    });
    const approver = await domainGrantedToken(world.a.mailboxId, ['MailboxApprove']);
    expect((await server.api(approver.token).post(`/api/messages/${id}/approve`)).status).toBe(409);
  });

  it('approving a message that was never held is 409 APPROVAL_NOT_PENDING', async () => {
    await setPolicy(world.b.mailboxId, {});
    const res = await server.api(world.b.token).post('/api/messages/send', sendBody(world.a.address));
    expect(res.body.data.status).toBe('queued');
    const r = await server.api(world.domain.token).post(`/api/messages/${res.body.data.messageId}/approve`);
    expect(r.status).toBe(409);
    expect(r.body.errMsg).toContain('never held');
  });

  it('MailboxApprove is in neither the bootstrap token nor a password login token', async () => {
    const rows =
      await q`select scopes from access_token where mailbox_id = ${world.a.mailboxId} and created_source = 'bootstrap'`;
    expect(rows[0].scopes).not.toContain('MailboxApprove');
  });
});
