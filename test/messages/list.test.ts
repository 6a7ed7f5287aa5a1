import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintMailboxToken, seedMany, seedMessage, twoTenants, type Tenants } from '../support/seed-messages.js';
import { rowsOf } from '../delivery/helpers.js';
import { runWorkerUntil } from '../transport/world.js';

let server: TestServer;
let t: Tenants;
beforeAll(async () => {
  server = await startTestServer();
  t = await twoTenants(server);
  await seedMany(server, 3, { mailboxId: t.a1.mailboxId, direction: 'inbound' });
  await seedMany(server, 2, {
    mailboxId: t.a1.mailboxId,
    direction: 'outbound',
    newest: new Date(Date.now() - 10_000),
  });
  await seedMessage(server, { mailboxId: t.a1.mailboxId, subject: 'gone', deletedAt: new Date() });
  await seedMessage(server, { mailboxId: t.a2.mailboxId, subject: 'a2 only' });
  await seedMessage(server, { mailboxId: t.b1.mailboxId, subject: 'b1 only' });
});
afterAll(async () => {
  await server?.close();
});

const list = (token: string, query = '') => server.api(token).get(`/api/messages${query}`);

describe('GET /api/messages', () => {
  it("lists the mailbox token's own live messages, newest first, with the summary shape", async () => {
    const res = await list(t.a1.token);
    expect(res.status).toBe(200);
    const { items, nextCursor, totalCount } = res.body.data;
    expect(totalCount).toBe(5);
    expect(nextCursor).toBeNull();
    expect(items).toHaveLength(5);
    expect(items.map((m: any) => m.subject)).not.toContain('gone');
    const created = items.map((m: any) => m.createdAtTs);
    expect([...created].sort((a, b) => b - a)).toEqual(created);
    expect(Object.keys(items[0]).sort()).toEqual([
      'approvalStatus',
      'attachmentCount',
      'authenticated',
      'createdAtTs',
      'direction',
      'fromAddress',
      'fromDisplayName',
      'isRead',
      'mailboxAddress',
      'mailboxId',
      'messageId',
      'origin',
      'readAtTs',
      'receiptId',
      'receivedAtTs',
      'screening',
      'sendAtTs',
      'sentAtTs',
      'snippet',
      'subject',
      'threadId',
      'toAddress',
    ]);
    expect(items[0]).toMatchObject({
      receiptId: items[0].messageId,
      mailboxId: t.a1.mailboxId,
      mailboxAddress: t.a1.address,
      direction: 'inbound',
      toAddress: t.a1.address,
      fromAddress: 'sender@remote.test',
      attachmentCount: 0,
      isRead: false,
      readAtTs: null,
      sentAtTs: null,
      sendAtTs: null,
    });
    expect(Number.isInteger(items[0].createdAtTs)).toBe(true);
    expect(items[0].receivedAtTs).toBe(items[0].createdAtTs);
  });

  it('gives a snippet: the first words of the text body, without quoted lines or signature, cut with an ellipsis', async () => {
    const box = await server.createMailbox(t.domA.token, `snippets@${t.domA.name}`);
    const long = `${'word '.repeat(60)}end`;
    const quoted = 'Yes, Thursday works.\n\n> On Monday you wrote:\n> shall we meet?\n-- \nAlice, Sales';
    await seedMessage(server, { mailboxId: box.mailboxId, subject: 'snip long', bodyText: long });
    await seedMessage(server, { mailboxId: box.mailboxId, subject: 'snip quoted', bodyText: quoted });
    await seedMessage(server, { mailboxId: box.mailboxId, subject: 'snip none', bodyText: null });
    const items: any[] = (await list(box.token)).body.data.items;
    const by = (subject: string) => items.find((m) => m.subject === subject)!.snippet;
    expect(by('snip quoted')).toBe('Yes, Thursday works.');
    expect(by('snip none')).toBe('');
    expect(by('snip long').length).toBeLessThanOrEqual(141);
    expect(by('snip long')).toMatch(/^word word .*word…$/);
    // The same summary in search results.
    const found = await server.api(box.token).get(`/api/messages/search?q=${encodeURIComponent('subject:quoted')}`);
    expect(found.body.data.items[0].snippet).toBe('Yes, Thursday works.');
  });

  it('stores the snippet when a message is written (sender and recipient copies), so a list reads no body', async () => {
    const q = rowsOf(() => server);
    const a = await server.createMailbox(t.domA.token, `snip-a@${t.domA.name}`);
    const b = await server.createMailbox(t.domA.token, `snip-b@${t.domA.name}`);
    const res = await server.api(a.token).post('/api/messages/send', {
      toAddress: b.address,
      subject: 'stored snippet',
      bodyText: 'Meet at noon.\n\n> earlier text\n-- \nA',
    });
    expect(res.status).toBe(202);
    const id = res.body.data.messageId as string;
    expect((await q`select snippet from message where id = ${id}`)[0].snippet).toBe('Meet at noon.');
    const delivered = async () =>
      (await q`select id, snippet from message where mailbox_id = ${b.mailboxId} and subject = 'stored snippet'`)[0];
    await runWorkerUntil(server, async () => (await delivered()) !== undefined, 'delivered to b');
    expect((await delivered()).snippet).toBe('Meet at noon.');
    // Written before snippets were stored (null): computed from the body's start when listed.
    await q`update message set snippet = null where id = ${id}`;
    const listed = (await list(a.token)).body.data.items.find((m: any) => m.messageId === id);
    expect(listed.snippet).toBe('Meet at noon.');
  });

  it('accepts the own mailboxAddress from a mailbox token, in any case', async () => {
    const res = await list(t.a1.token, `?mailboxAddress=${encodeURIComponent(t.a1.address.toUpperCase())}`);
    expect(res.status).toBe(200);
    expect(res.body.data.totalCount).toBe(5);
  });

  it("filters by direction, with that direction's totalCount", async () => {
    const inbound = await list(t.a1.token, '?direction=inbound');
    expect(inbound.body.data.totalCount).toBe(3);
    expect(inbound.body.data.items.every((m: any) => m.direction === 'inbound')).toBe(true);
    const outbound = await list(t.a1.token, '?direction=outbound');
    expect(outbound.body.data.totalCount).toBe(2);
    expect(outbound.body.data.items).toHaveLength(2);
    expect(outbound.body.data.items[0]).toMatchObject({
      direction: 'outbound',
      fromAddress: t.a1.address,
      toAddress: 'friend@remote.test',
      receivedAtTs: null,
    });
  });

  it('lets a domain token list any mailbox of its domain by mailboxAddress', async () => {
    const res = await list(t.domA.token, `?mailboxAddress=${t.a2.address}`);
    expect(res.status).toBe(200);
    expect(res.body.data.items.map((m: any) => m.subject)).toEqual(['a2 only']);
    expect(res.body.data.totalCount).toBe(1);
  });

  it('honours limit and returns a cursor when more remain', async () => {
    const res = await list(t.a1.token, '?limit=2');
    expect(res.body.data.items).toHaveLength(2);
    expect(res.body.data.nextCursor).toEqual(expect.any(String));
    expect(res.body.data.totalCount).toBe(5);
  });

  describe('400s', () => {
    it.each([
      ['an invalid mailboxAddress', '?mailboxAddress=not-an-address'],
      ['a bad direction', '?direction=sideways'],
      ['limit 0', '?limit=0'],
      ['limit 201', '?limit=201'],
      ['limit abc', '?limit=abc'],
      ['limit 1.5', '?limit=1.5'],
    ])('%s', async (_name, query) => {
      const res = await list(t.a1.token, query);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ data: null, code: 400 });
      expect(res.body.errMsg).toEqual(expect.any(String));
    });

    it('a domain token without mailboxAddress', async () => {
      const res = await list(t.domA.token);
      expect(res.status).toBe(400);
      expect(res.body.errMsg).toMatch(/mailboxAddress/);
    });

    it('a mailbox token naming another mailbox, of its domain or not', async () => {
      expect((await list(t.a1.token, `?mailboxAddress=${t.a2.address}`)).status).toBe(400);
      expect((await list(t.a1.token, `?mailboxAddress=${t.b1.address}`)).status).toBe(400);
    });

    it('accepts limit 1 and 200', async () => {
      expect((await list(t.a1.token, '?limit=1')).status).toBe(200);
      expect((await list(t.a1.token, '?limit=200')).status).toBe(200);
    });
  });

  it('answers 404 when a domain token names a mailbox of another domain or an unknown one', async () => {
    expect((await list(t.domA.token, `?mailboxAddress=${t.b1.address}`)).status).toBe(404);
    expect((await list(t.domA.token, `?mailboxAddress=nobody@${t.domA.name}`)).status).toBe(404);
  });

  it('answers 401 without or with a bad token', async () => {
    const none = await server.api().get('/api/messages');
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ data: null, code: 401 });
    expect((await list('mbxm_notatoken')).status).toBe(401);
  });

  it('answers 403 to a token without MailboxRead', async () => {
    const sendOnly = await mintMailboxToken(server, t.a1.mailboxId, ['MailboxSend']);
    const res = await list(sendOnly);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ data: null, code: 403 });
    const domainNoRead = await server.createDomain(undefined, { scopes: ['DomainManage'] });
    expect((await list(domainNoRead.token, `?mailboxAddress=x@${domainNoRead.name}`)).status).toBe(403);
  });
});
