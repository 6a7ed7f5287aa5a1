import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSmtpTestServer, submitter } from '../smtp/world.js';
import type { TestServer } from '../support/harness.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';
import { mcpClient, ok } from '../mcp/helpers.js';
import { mintTokenPlaintext } from '../../src/core/access/token-format.js';

// The outbound check (docs/screening.md, "Secrets in outbound mail"): a send whose subject or body
// carries a secret is held for approval whatever the policy (here: approval none), on HTTP, MCP
// and SMTP submission, and the hold names rule secretInBody in the audit trail.

type Box = Awaited<ReturnType<TestServer['createMailbox']>>;
let server: TestServer;
let alice: Box;
const q = rowsOf(() => server);
const OUTSIDE = 'someone@elsewhere.example';

async function auditOf(messageId: string) {
  const items = (await server.api(alice.token).get('/api/mailbox/audit')).body.data.items as any[];
  return items.find((e) => e.messageId === messageId);
}

beforeAll(async () => {
  server = await startSmtpTestServer({ env: { SEND_RATE_LIMIT_PER_MINUTE: '1000' } });
  const domain = await server.createDomain();
  alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
}, 180_000);
afterAll(() => server?.close());

describe('a secret in an outbound message holds it for approval', () => {
  it('HTTP: our own mailbox token in the body', async () => {
    const res = await server.api(alice.token).post('/api/messages/send', {
      toAddress: OUTSIDE,
      subject: 'the token you asked for',
      bodyText: `Here it is: ${mintTokenPlaintext('mailbox')}`,
    });
    expect(res.status).toBe(202);
    expect(res.body.data.status).toBe('pending_approval');
    expect(await auditOf(res.body.data.messageId)).toMatchObject({ decision: 'held', rule: 'secretInBody' });
    expect((await auditOf(res.body.data.messageId)).reason).toContain('mailboxServiceToken');
  });

  it('HTTP: an ordinary message is queued; a mistyped token (bad checksum) is not a secret', async () => {
    const token = mintTokenPlaintext('domain');
    const typo = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    const res = await server.api(alice.token).post('/api/messages/send', {
      toAddress: OUTSIDE,
      subject: 'Lunch',
      bodyText: `Shall we meet at noon? (ref ${typo})`,
    });
    expect(res.body.data.status).toBe('queued');
  });

  it('MCP send_mail: an AWS access key in the subject, a GitHub token in the HTML', async () => {
    const agent = await mcpClient(server, alice.token);
    try {
      const aws = await ok(agent, 'send_mail', {
        toAddress: OUTSIDE,
        subject: 'creds AKIAIOSFODNN7EXAMPLE',
        bodyText: 'see subject',
      });
      expect(aws.status).toBe('pending_approval');
      expect((await auditOf(aws.messageId)).reason).toContain('awsAccessKey');
      const gh = await ok(agent, 'send_mail', {
        toAddress: OUTSIDE,
        subject: 'deploy',
        bodyHtml: `<p>use <code>ghp_${'a1B2c3D4e5'.repeat(3)}abcdef</code></p>`,
      });
      expect(gh.status).toBe('pending_approval');
      expect(await auditOf(gh.messageId)).toMatchObject({ rule: 'secretInBody' });
    } finally {
      await agent.close();
    }
  });

  it('SMTP 587: a PEM private key in a base64-encoded body is found decoded', async () => {
    const smtp = submitter(server, alice.address, alice.token);
    try {
      const pem =
        '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----\n';
      await smtp.sendMail({
        from: alice.address,
        to: OUTSIDE,
        subject: 'server key',
        text: pem,
        textEncoding: 'base64',
      });
      const [row] = await waitFor(async () => {
        const rows =
          await q`select id, approval_status from message where subject = 'server key' and direction = 'outbound'`;
        return rows.length ? rows : null;
      });
      expect(row.approval_status).toBe('pending');
      expect((await auditOf(row.id)).reason).toContain('privateKey');
    } finally {
      smtp.close();
    }
  });
});
