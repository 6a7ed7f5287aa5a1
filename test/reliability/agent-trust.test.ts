import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody } from '../delivery/helpers.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { rfc5322 } from '../smtp/smtp-wire.js';
import { mxPort, startSmtpTestServer } from '../smtp/world.js';
import { deliverToMx } from '../smtp/mx-peer.js';
import { mcpClient, call } from '../mcp/helpers.js';
import { setMailboxPassword } from '../support/tenants.js';
import { DEFAULT_INTEGRATION_SCOPES } from '../../src/core/access/scopes.js';
import { zeroFigure } from './support/figures.js';

// Figures for the trust on an agent's path (docs/trust.md), each as an attacker works it: a
// spoofed code mail, a password login after an approver token exists, an agent approving its own
// send, one forged mail opening `approval: new-recipients`, a narrow token switching off wider
// ones, and a domain token naming the mailbox on a write. The rules themselves are tested in
// test/smtp/trust-reads, test/tokens, test/policy/approval and test/policy/contacts.

const SUITE = 'authorization';
const PASSWORD = 'correct horse battery staple';
let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let domain: { domainId: string; name: string; token: string };
let agent: { mailboxId: string; address: string; token: string; tokenId: string };
let other: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);

const grant = async (scopes: string[]) => {
  const res = await server
    .api(domain.token)
    .post(`/api/domain/mailboxes/${agent.mailboxId}/access-tokens`, { tokenName: 'granted', scopes });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { tokenId: string; accessToken: string };
};
const setPolicy = async (policy: Record<string, unknown>) =>
  expect((await server.api(domain.token).put(`/api/domain/mailboxes/${agent.mailboxId}/policy`, policy)).status).toBe(
    200,
  );

beforeAll(async () => {
  dns = await startDnsStub({ 'evil.example': { TXT: ['v=spf1 +all'] } });
  server = await startSmtpTestServer({
    roles: ['api', 'smtp', 'worker'],
    env: { DNS_SERVERS: dns.server, SEND_RATE_LIMIT_PER_MINUTE: '10000', WORKER_POLL_INTERVAL: '50ms' },
  });
  domain = await server.createDomain();
  agent = await server.createMailbox(domain.token, `agent@${domain.name}`, 'Agent');
  other = await server.createMailbox(domain.token, `other@${domain.name}`, 'Other');
  await setMailboxPassword(server, agent.mailboxId, PASSWORD);
}, 180_000);
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

describe('trust on the agent path', () => {
  it('spoofed code mail: no read calls it authenticated, no look-alike or display name matches `from`', async () => {
    const forged = [
      'GitHub <noreply@github.com>',
      'noreply@github.com.evil.example',
      '"github.com" <x@evil.example>',
      'GitHub <security@github.com>',
    ];
    for (const [i, from] of forged.entries()) {
      const raw = rfc5322({ from, to: agent.address, subject: `code ${i}`, body: `Your code is ${480000 + i}.` });
      await deliverToMx(mxPort(server), { from: 'b@nowhere.example', to: agent.address }, raw);
    }
    const api = server.api(agent.token);
    const answers = [
      (await api.get('/api/messages/verification-code?timeoutMs=0')).body.data.message,
      (await api.get('/api/messages/verification-code?timeoutMs=0&from=github.com')).body.data.message,
      ...(await api.get('/api/messages?limit=50')).body.data.items,
    ];
    const mcp = await mcpClient(server, agent.token);
    const viaMcp = await call(mcp, 'get_verification_code', { from: 'github.com', timeoutMs: 0 });
    answers.push((viaMcp.structuredContent as any).message);
    await mcp.close();
    const calledAuthenticated = answers.filter((m) => m.origin !== 'external' || m.authenticated !== false).length;
    zeroFigure(
      SUITE,
      `spoofed port-25 code mail read as internal or authenticated (${answers.length} reads)`,
      calledAuthenticated,
    );
    const lookalikes = answers.filter((m) => !/@github\.com$/.test(m.fromAddress)).length;
    const fromMatches = [answers[1], (viaMcp.structuredContent as any).message];
    const wrongFrom = fromMatches.filter((m) => !/@github\.com$/.test(m.fromAddress)).length;
    zeroFigure(SUITE, 'look-alike or display-name senders matched by from=github.com', wrongFrom);
    const strict = (await api.get('/api/messages/verification-code?timeoutMs=0&requireAuthenticated=true')).body.data;
    zeroFigure(SUITE, 'forged codes answered with requireAuthenticated', strict.code === null ? 0 : 1);
    expect(calledAuthenticated + wrongFrom).toBe(0);
    expect(lookalikes).toBeGreaterThan(0); // the forged look-alikes are in the list, read as untrusted
    expect(strict.code).toBeNull();
  });

  it('password login hands out no privileged token, and no token approves its own send', async () => {
    await setPolicy({ approval: 'all' });
    const approver = await grant([...DEFAULT_INTEGRATION_SCOPES, 'MailboxApprove', 'WebhookManage']);
    let privileged = 0;
    for (let i = 0; i < 3; i++) {
      const login = await server
        .api()
        .post('/api/mailbox/auth/login/password', { mailboxAddress: agent.address, password: PASSWORD });
      expect(login.status).toBe(200);
      const extra = (login.body.data.scopes as string[]).filter(
        (s) => !DEFAULT_INTEGRATION_SCOPES.includes(s as never),
      );
      if (extra.length > 0 || login.body.data.tokenId === approver.tokenId) privileged++;
    }
    zeroFigure(SUITE, 'password logins answered with a token beyond the default scopes (3 logins)', privileged);

    // The worst case: the sending token itself holds MailboxApprove; it and a child it mints try.
    const send = await server.api(approver.accessToken).post('/api/messages/send', sendBody('drop@evil.example'));
    const id = send.body.data.messageId as string;
    const child = (
      await server
        .api(approver.accessToken)
        .post('/api/mailbox/access-tokens', { tokenName: 'child', scopes: ['MailboxApprove'] })
    ).body.data;
    const attempts = [
      await server.api(approver.accessToken).post(`/api/messages/${id}/approve`),
      await server.api(child.accessToken).post(`/api/messages/${id}/approve`),
    ].map((r) => r.status);
    const mcp = await mcpClient(server, approver.accessToken);
    const viaMcp = await call(mcp, 'decide_approval', { messageId: id, decision: 'approve' });
    await mcp.close();
    const accepted = attempts.filter((s) => s === 200).length + (viaMcp.isError ? 0 : 1);
    zeroFigure(SUITE, 'self-approvals accepted (HTTP, MCP, a child token)', accepted);
    const [row] = await q`select approval_status from message where id = ${id}`;
    expect(accepted).toBe(0);
    expect(privileged).toBe(0);
    expect(row.approval_status).toBe('pending');
  });

  it('one unauthenticated inbound mail does not open new-recipients approval to its sender', async () => {
    await setPolicy({ approval: 'new-recipients' });
    const senders = ['drop1@evil.example', 'drop2@evil.example', 'drop3@nospf.example'];
    for (const [i, from] of senders.entries()) {
      const envelope = i === 1 ? '' : from;
      await deliverToMx(mxPort(server), { from: envelope, to: agent.address }, rfc5322({ from, to: agent.address }));
    }
    let queued = 0;
    for (const to of senders) {
      const res = await server.api(agent.token).post('/api/messages/send', sendBody(to));
      if (res.body.data.status !== 'pending_approval') queued++;
    }
    zeroFigure(SUITE, 'sends to an unauthenticated inbound sender queued without approval (3 senders)', queued);
    expect(queued).toBe(0);
  });

  it('a TokenManage-only token disables or deletes no wider token', async () => {
    const narrow = (
      await server.api(agent.token).post('/api/mailbox/access-tokens', { tokenName: 'n', scopes: ['TokenManage'] })
    ).body.data;
    let switchedOff = 0;
    for (const verb of ['disable', 'delete'] as const) {
      const wide = await grant(['MailboxRead', 'MailboxApprove', 'TokenManage']);
      const res =
        verb === 'disable'
          ? await server.api(narrow.accessToken).post(`/api/mailbox/access-tokens/${wide.tokenId}/disable`)
          : await server.api(narrow.accessToken).delete(`/api/mailbox/access-tokens/${wide.tokenId}`);
      if (res.status === 200 || (await server.api(wide.accessToken).get('/api/messages')).status !== 200) switchedOff++;
    }
    zeroFigure(SUITE, 'wider tokens disabled or deleted by a TokenManage-only token (2 attempts)', switchedOff);
    expect(switchedOff).toBe(0);
  });

  it('domain-token writes accept mailboxAddress in body or query and refuse another mailbox', async () => {
    await setPolicy({ approval: 'all' });
    const held = async () =>
      (await server.api(agent.token).post('/api/messages/send', sendBody(other.address))).body.data.messageId as string;
    const d = server.api(domain.token);
    const named = [
      await d.post(`/api/messages/${await held()}/approve`, { mailboxAddress: agent.address }),
      await d.post(`/api/messages/${await held()}/reject`, { mailboxAddress: agent.address }),
      await d.post(`/api/messages/${await held()}/reject?mailboxAddress=${agent.address}`),
    ];
    const refusedNaming = named.filter((r) => r.status !== 200).length;
    zeroFigure(SUITE, 'domain-token approve/reject naming the right mailbox refused (3)', refusedNaming);
    const wrong = [
      await d.post(`/api/messages/${await held()}/approve`, { mailboxAddress: other.address }),
      await d.post(`/api/messages/${await held()}/reject?mailboxAddress=${other.address}`),
    ];
    const acceptedWrong = wrong.filter((r) => r.status !== 400).length;
    zeroFigure(SUITE, 'domain-token writes naming another mailbox accepted (2)', acceptedWrong);
    expect(refusedNaming + acceptedWrong).toBe(0);
  });
});
