import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock } from '../support/tenants.js';
import { twoMailboxes } from '../delivery/helpers.js';
import { fails, mcpClient, ok, sameError } from '../mcp/helpers.js';
import { subscribe } from '../realtime/client.js';

// The draft tools and cancel_scheduled_send through the MCP SDK's own client (which checks every
// structuredContent against the tool's outputSchema): the same core calls, shapes and errors as
// the HTTP routes (docs/api.md, "MCP"; docs/workflow.md, "Drafts").

let clock: ManualClock;
let server: TestServer;
const clients: Client[] = [];
const HOUR = 3_600_000;

beforeAll(async () => {
  clock = new ManualClock();
  server = await startTestServer({ clock, roles: ['api', 'realtime'], env: { SEND_RATE_LIMIT_PER_MINUTE: '1000' } });
}, 180_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.close();
});

async function client(token: string): Promise<Client> {
  const c = await mcpClient(server, token);
  clients.push(c);
  return c;
}

describe('MCP draft tools', () => {
  it('create_draft, list_drafts, get_draft, update_draft, send_draft: the HTTP shapes, the draft sent and gone', async () => {
    const { a, b } = await twoMailboxes(server);
    const mcp = await client(a.token);
    const created = await ok(mcp, 'create_draft', { subject: 'For review', bodyText: 'Dear Bob,' });
    expect(created).toMatchObject({ draftId: expect.stringMatching(/^drf_/), toAddress: [], subject: 'For review' });
    const http = await server.api(a.token).get(`/api/drafts/${created.draftId}`);
    expect(await ok(mcp, 'get_draft', { draftId: created.draftId })).toEqual(http.body.data);
    const page = await ok(mcp, 'list_drafts', { limit: 10 });
    expect(page).toEqual((await server.api(a.token).get('/api/drafts?limit=10')).body.data);
    expect(page.items.map((d: any) => d.draftId)).toEqual([created.draftId]);

    // Incomplete: the same 400 as over HTTP, and the draft stays.
    const incomplete = await fails(mcp, 'send_draft', { draftId: created.draftId });
    sameError(await server.api(a.token).post(`/api/drafts/${created.draftId}/send`), incomplete);
    expect(incomplete).toMatchObject({ code: 400, errorCode: 'VALIDATION_FAILED' });
    expect(incomplete.errMsg).toMatch(/^toAddress: required/);

    const updated = await ok(mcp, 'update_draft', { draftId: created.draftId, toAddress: b.address, subject: null });
    expect(updated).toMatchObject({ toAddress: [b.address], subject: null, bodyText: 'Dear Bob,' });
    const sent = await ok(mcp, 'send_draft', { draftId: created.draftId, idempotencyKey: 'mcp-draft-1' });
    expect(sent).toMatchObject({ status: 'queued', messageId: expect.stringMatching(/^msg_/) });
    expect(await ok(mcp, 'send_draft', { draftId: created.draftId, idempotencyKey: 'mcp-draft-1' })).toEqual(sent);
    const message = (await server.api(a.token).get(`/api/messages/${sent.messageId}`)).body.data;
    expect(message).toMatchObject({ toAddresses: [b.address], subject: '', bodyText: 'Dear Bob,' });
    expect(await fails(mcp, 'get_draft', { draftId: created.draftId })).toMatchObject({ code: 404 });
    expect((await ok(mcp, 'list_drafts', {})).totalCount).toBe(0);
  });

  it('delete_draft; a second delete and another tenant are 404', async () => {
    const { a, b } = await twoMailboxes(server);
    const mine = await client(a.token);
    const theirs = await client(b.token);
    const { draftId } = await ok(mine, 'create_draft', { bodyText: 'x' });
    for (const name of ['get_draft', 'delete_draft', 'send_draft'])
      expect(await fails(theirs, name, { draftId }), name).toMatchObject({ code: 404, errorCode: 'NOT_FOUND' });
    expect(await fails(theirs, 'update_draft', { draftId, subject: 'x' })).toMatchObject({ code: 404 });
    expect(await ok(mine, 'delete_draft', { draftId })).toEqual({ draftId, deleted: true });
    const again = await fails(mine, 'delete_draft', { draftId });
    sameError(await server.api(a.token).delete(`/api/drafts/${draftId}`), again);
  });

  it('a domain token names the mailbox: create_draft needs it, a wrong one on a draft is TARGET_MAILBOX_MISMATCH', async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const mcp = await client(domain.token);
    expect(await fails(mcp, 'create_draft', { subject: 'x' })).toMatchObject({ errorCode: 'MAILBOX_ADDRESS_REQUIRED' });
    const { draftId } = await ok(mcp, 'create_draft', {
      mailboxAddress: a.address,
      toAddress: b.address,
      bodyText: 'y',
    });
    expect((await ok(mcp, 'list_drafts', { mailboxAddress: a.address })).totalCount).toBe(1);
    expect(await fails(mcp, 'list_drafts', {})).toMatchObject({ errorCode: 'MAILBOX_ADDRESS_REQUIRED' });
    for (const name of ['update_draft', 'send_draft', 'delete_draft'])
      expect(await fails(mcp, name, { draftId, mailboxAddress: b.address }), name).toMatchObject({
        code: 400,
        errorCode: 'TARGET_MAILBOX_MISMATCH',
      });
    expect(await ok(mcp, 'send_draft', { draftId, mailboxAddress: a.address })).toMatchObject({ status: 'queued' });
  });

  it("send_draft with sendAt schedules it; cancel_scheduled_send cancels it through the route's own core call", async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const mcp = await client(a.token);
    const sendAt = clock.now().getTime() + HOUR;
    const { draftId } = await ok(mcp, 'create_draft', { toAddress: b.address, bodyText: 'later', sendAt });
    const scheduled = await ok(mcp, 'send_draft', { draftId });
    expect(scheduled).toMatchObject({ status: 'scheduled', sendAtTs: sendAt });
    const other = await client(b.token);
    expect(await fails(other, 'cancel_scheduled_send', { messageId: scheduled.messageId })).toMatchObject({
      code: 404,
    });
    const byDomain = await client(domain.token);
    const mismatch = await fails(byDomain, 'cancel_scheduled_send', {
      messageId: scheduled.messageId,
      mailboxAddress: b.address,
    });
    sameError(
      await server
        .api(domain.token)
        .delete(`/api/messages/${scheduled.messageId}/schedule?mailboxAddress=${encodeURIComponent(b.address)}`),
      mismatch,
    );
    expect(mismatch.errorCode).toBe('TARGET_MAILBOX_MISMATCH');
    expect(await ok(mcp, 'cancel_scheduled_send', { messageId: scheduled.messageId })).toEqual({
      messageId: scheduled.messageId,
      status: 'cancelled',
      cancelled: true,
    });
    expect(
      await ok(byDomain, 'cancel_scheduled_send', { messageId: scheduled.messageId, mailboxAddress: a.address }),
    ).toMatchObject({ cancelled: false });
    expect((await server.api(a.token).get(`/api/messages/${scheduled.messageId}`)).body.data.status).toBe('cancelled');
    // A message sent at once cannot be cancelled: the same 409 as DELETE …/schedule.
    const { draftId: now } = await ok(mcp, 'create_draft', { toAddress: b.address, bodyText: 'now' });
    const queued = await ok(mcp, 'send_draft', { draftId: now });
    const late = await fails(mcp, 'cancel_scheduled_send', { messageId: queued.messageId });
    sameError(await server.api(a.token).delete(`/api/messages/${queued.messageId}/schedule`), late);
    expect(late).toMatchObject({ code: 409, errorCode: 'SCHEDULE_NOT_CANCELLABLE' });
  });

  it('the draft events reach a Socket.IO client of the mailbox, live, in order', async () => {
    const { a, b } = await twoMailboxes(server);
    const rec = await subscribe(server.url, { auth: { token: a.token } });
    const mcp = await client(a.token);
    const { draftId } = await ok(mcp, 'create_draft', { toAddress: b.address });
    await ok(mcp, 'update_draft', { draftId, bodyText: 'ready' });
    const sent = await ok(mcp, 'send_draft', { draftId });
    await rec.until(() => rec.named('draft.deleted').length === 1, 10_000, 'draft.deleted');
    expect(rec.events.map((e) => e.type)).toEqual(['draft.created', 'draft.updated', 'message.sent', 'draft.deleted']);
    expect(rec.named('draft.created')[0]).toMatchObject({
      mailboxAddress: a.address,
      data: { draftId, toAddress: [b.address] },
    });
    expect(rec.named('draft.deleted')[0].data).toEqual({ draftId, reason: 'sent', messageId: sent.messageId });
    rec.socket.close();
  });
});
