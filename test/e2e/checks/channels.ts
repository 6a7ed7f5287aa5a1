import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Api, mcpClient, queuedId, smtpSend, type SmtpTarget } from '../support/clients.js';
import { figure } from '../support/figures.js';
import { waitFor } from '../support/kubectl.js';
import type { Identity } from './operator.js';

// Every channel once, through the Services: HTTP (NodePort of the api Service), MCP (same), SMTP
// submission 587 with STARTTLS + AUTH and inbound 25 (the smtp LoadBalancer Service).

export interface Reach {
  apiBase: string;
  submission: SmtpTarget;
  mx: SmtpTarget;
}

/** The inbound message with this subject in the mailbox, once it arrived. */
export async function arrived(api: Api, subject: string, timeoutMs = 30_000): Promise<any> {
  return waitFor(
    `"${subject}" in ${api.base}`,
    async () => {
      const r = await api.call('GET', `/api/messages?direction=inbound&limit=50`);
      return r.status === 200 ? r.data.items.find((m: any) => m.subject === subject) : undefined;
    },
    timeoutMs,
    500,
  );
}

export async function httpChannel(reach: Reach, agent: Identity, peer: Identity): Promise<void> {
  const a = new Api(reach.apiBase, agent.token);
  const p = new Api(reach.apiBase, peer.token);
  const subject = `e2e http ${Date.now()}`;
  const started = Date.now();
  const sent = await a.send(peer.address, subject, 'hello over HTTP');
  const copy = await arrived(p, subject);
  const reply = await p.call('POST', `/api/messages/${copy.messageId}/reply`, { bodyText: 'and back' });
  const back = await arrived(a, `Re: ${subject}`);
  const list = await a.call('GET', '/api/messages?limit=10');
  const ok =
    sent.status === 202 && reply.status === 202 && Boolean(back) && list.status === 200 && list.data.totalCount >= 2;
  figure({
    suite: 'channels',
    name: 'HTTP send (202) → delivered, reply (202) → delivered, list (200) (s)',
    value: ok ? (Date.now() - started) / 1000 : `send ${sent.status}, reply ${reply.status}, list ${list.status}`,
    target: '≤ 30 s',
    pass: ok,
  });
}

export async function smtpChannels(reach: Reach, agent: Identity, peer: Identity): Promise<void> {
  const p = new Api(reach.apiBase, peer.token);
  const subject = `e2e smtp587 ${Date.now()}`;
  const reply = await smtpSend(
    reach.submission,
    { from: agent.address, to: peer.address, subject, text: 'over submission' },
    { user: agent.address, pass: agent.token },
  );
  const delivered = await arrived(p, subject).catch(() => null);
  figure({
    suite: 'channels',
    name: `SMTP ${reach.submission.host}:${reach.submission.port} STARTTLS (verified) + AUTH → 250, delivered`,
    value: `${reply.slice(0, 13)}, ${delivered ? 'delivered' : 'not delivered'}`,
    target: '250 2.0.0, delivered',
    pass: queuedId(reply) !== null && Boolean(delivered),
  });
  const a = new Api(reach.apiBase, agent.token);
  const inbound = `e2e mx ${Date.now()}`;
  const mxReply = await smtpSend(reach.mx, {
    from: 'sender@outside.example',
    to: agent.address,
    subject: inbound,
    text: 'from outside',
  });
  const stored = await arrived(a, inbound).catch(() => null);
  figure({
    suite: 'channels',
    name: `SMTP ${reach.mx.host}:${reach.mx.port} inbound from outside → 250, in the mailbox`,
    value: `${mxReply.slice(0, 3)}, ${stored ? 'stored' : 'missing'}`,
    target: '250, stored',
    pass: mxReply.startsWith('250') && Boolean(stored),
  });
}

export async function mcpChannel(reach: Reach, agent: Identity, peer: Identity): Promise<void> {
  const client = await mcpClient(reach.apiBase, agent.token);
  try {
    const tools = await client.listTools();
    const list = (await client.callTool({ name: 'list_messages', arguments: { limit: 5 } })) as CallToolResult;
    const subject = `e2e mcp ${Date.now()}`;
    const sent = (await client.callTool({
      name: 'send_mail',
      arguments: { toAddress: peer.address, subject, bodyText: 'over MCP' },
    })) as CallToolResult;
    const delivered = await arrived(new Api(reach.apiBase, peer.token), subject).catch(() => null);
    const ok = !list.isError && !sent.isError && Boolean(delivered);
    figure({
      suite: 'channels',
      name: 'MCP (SDK client, api Service): tools listed, list_messages, send_mail → delivered',
      value: ok
        ? `${tools.tools.length} tools, delivered`
        : JSON.stringify({ list: list.isError, sent: sent.content }).slice(0, 160),
      target: 'delivered',
      pass: ok,
    });
  } finally {
    await client.close();
  }
}
