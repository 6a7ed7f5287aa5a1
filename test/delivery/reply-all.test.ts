import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { TestServer } from '../support/harness.js';
import { rowsOf, twoMailboxes } from './helpers.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { rfc5322 } from '../smtp/smtp-wire.js';
import { addAlias, addIdentity, mxPort, startSmtpTestServer, submitter } from '../smtp/world.js';
import { deliverToMx } from '../smtp/mx-peer.js';
import { mcpClient, ok } from '../mcp/helpers.js';

// docs/workflow.md, "Replies": References chains, one "Re: ", reply-all without the mailbox's own
// addresses, on HTTP and MCP; replies written in an SMTP client keep what the client wrote.

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
const q = rowsOf(() => server);
const clients: Client[] = [];

beforeAll(async () => {
  dns = await startDnsStub({});
  server = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server } });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.close();
  await dns?.close();
});

/** A mailbox with an alias and an extra sender identity, and one message from outside that names them all. */
async function world(tag: string, headers: string[] = []) {
  const { a } = await twoMailboxes(server);
  const domain = a.address.split('@')[1]!;
  const alias = `sales-${tag}@${domain}`;
  const identity = `me-${tag}@${domain}`;
  await addAlias(server, a.mailboxId, alias, { identity: false });
  await addIdentity(server, a.mailboxId, identity);
  const raw = rfc5322({
    from: 'Carol <carol@peer.example>',
    to: `${a.address}, dave@peer.example`,
    subject: 'RE: Re: Lunch?',
    headers: [
      `Cc: ${alias.toUpperCase()}, erin@peer.example, ${identity}, Dave@peer.example`,
      `Message-ID: <lunch-${tag}@peer.example>`,
      'References: <root@peer.example> <mid@peer.example>',
      'In-Reply-To: <mid@peer.example>',
      ...headers,
    ],
  });
  const { response } = await deliverToMx(mxPort(server), { from: 'carol@peer.example', to: a.address }, raw);
  expect(response).toMatch(/^250 /);
  const [parent] =
    await q`select id, thread_id from message where mailbox_id = ${a.mailboxId} and internet_message_id = ${`<lunch-${tag}@peer.example>`}`;
  return { a, alias, identity, parent: parent as { id: string; thread_id: string } };
}

const rowOf = async (messageId: string) =>
  (
    await q`select subject, to_addresses, cc_addresses, references_header, in_reply_to_message_id, thread_id from message where id = ${messageId}`
  )[0];

describe('reply-all', () => {
  it("HTTP: To is the Reply-To, Cc the parent's To and Cc without the mailbox's own addresses, plus ccAddresses", async () => {
    const { a, parent } = await world('http', ['Reply-To: Team <team@peer.example>']);
    const res = await server.api(a.token).post(`/api/messages/${parent.id}/reply`, {
      replyAll: true,
      ccAddresses: ['frank@peer.example', 'erin@peer.example'],
      bodyText: 'Count me in',
    });
    expect(res.status).toBe(202);
    expect(await rowOf(res.body.data.messageId)).toEqual({
      subject: 'Re: Lunch?',
      to_addresses: ['team@peer.example'],
      cc_addresses: ['dave@peer.example', 'erin@peer.example', 'frank@peer.example'],
      references_header: ['<root@peer.example>', '<mid@peer.example>', '<lunch-http@peer.example>'],
      in_reply_to_message_id: parent.id,
      thread_id: parent.thread_id,
    });
  });

  it('HTTP: without Reply-To the sender is To; without replyAll nobody else is copied', async () => {
    const { a, parent } = await world('plain');
    const all = await server.api(a.token).post(`/api/messages/${parent.id}/reply`, { replyAll: true, bodyText: 'x' });
    expect(await rowOf(all.body.data.messageId)).toMatchObject({
      to_addresses: ['carol@peer.example'],
      cc_addresses: ['dave@peer.example', 'erin@peer.example'],
    });
    const one = await server.api(a.token).post(`/api/messages/${parent.id}/reply`, { bodyText: 'x' });
    expect(await rowOf(one.body.data.messageId)).toMatchObject({
      to_addresses: ['carol@peer.example'],
      cc_addresses: [],
    });
  });

  it('HTTP: reply-all to mail the mailbox sent goes to its To and Cc, never back to the mailbox', async () => {
    const { a, alias } = await world('sent');
    const sent = await server.api(a.token).post('/api/messages/send', {
      toAddress: ['x@peer.example', alias],
      ccAddresses: ['y@peer.example', a.address],
      subject: 'Plan',
      bodyText: 'x',
    });
    const res = await server
      .api(a.token)
      .post(`/api/messages/${sent.body.data.messageId}/reply`, { replyAll: true, bodyText: 'y' });
    expect(await rowOf(res.body.data.messageId)).toMatchObject({
      subject: 'Re: Plan',
      to_addresses: ['x@peer.example'],
      cc_addresses: ['y@peer.example'],
    });
  });

  it('HTTP: a given subject gets exactly one "Re: " too', async () => {
    const { a, parent } = await world('subject');
    for (const [given, stored] of [
      ['Re: re: AW: Lunch', 'Re: Lunch'],
      ['Other topic', 'Re: Other topic'],
    ]) {
      const res = await server.api(a.token).post(`/api/messages/${parent.id}/reply`, { subject: given, bodyText: 'x' });
      expect((await rowOf(res.body.data.messageId)).subject).toBe(stored);
    }
  });

  it('MCP reply_message: replyAll behaves as on HTTP', async () => {
    const { a, parent } = await world('mcp', ['Reply-To: team@peer.example']);
    const client = await mcpClient(server, a.token);
    clients.push(client);
    const result = await ok(client, 'reply_message', {
      messageId: parent.id,
      replyAll: true,
      ccAddresses: ['frank@peer.example'],
      bodyText: 'From the agent',
    });
    expect(result).toMatchObject({ threadId: parent.thread_id, status: 'queued' });
    expect(await rowOf(result.messageId)).toEqual({
      subject: 'Re: Lunch?',
      to_addresses: ['team@peer.example'],
      cc_addresses: ['dave@peer.example', 'erin@peer.example', 'frank@peer.example'],
      references_header: ['<root@peer.example>', '<mid@peer.example>', '<lunch-mcp@peer.example>'],
      in_reply_to_message_id: parent.id,
      thread_id: parent.thread_id,
    });
  });

  it('SMTP: a reply written in a mail client keeps its subject and headers, and joins the thread', async () => {
    const { a, parent } = await world('smtp');
    await submitter(server, a.address, a.token).sendMail({
      from: a.address,
      to: 'carol@peer.example',
      subject: 'RE: Re: Lunch?',
      text: 'from Thunderbird',
      inReplyTo: '<lunch-smtp@peer.example>',
      references: ['<root@peer.example>', '<mid@peer.example>', '<lunch-smtp@peer.example>'],
    });
    const [row] =
      await q`select subject, thread_id, references_header from message where mailbox_id = ${a.mailboxId} and body_text like 'from Thunderbird%'`;
    expect(row).toEqual({
      subject: 'RE: Re: Lunch?',
      thread_id: parent.thread_id,
      references_header: ['<root@peer.example>', '<mid@peer.example>', '<lunch-smtp@peer.example>'],
    });
  });
});
