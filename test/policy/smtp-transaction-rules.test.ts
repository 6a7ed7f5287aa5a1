import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggedInWire, startSmtpTestServer } from '../smtp/world.js';
import { rfc5322 } from '../smtp/smtp-wire.js';
import type { TestServer } from '../support/harness.js';

// SMTP submission reads the policy with MAIL FROM (one statement with the sender identity) and
// judges each RCPT TO by it; end of DATA reads it again and decides the message (docs/api.md,
// "Outbound policy"). So a change made inside one transaction still decides that message, and
// rules that count new recipients still see the mailbox's contacts at RCPT TO.

let server: TestServer;
let domain: { name: string; token: string };

beforeAll(async () => {
  server = await startSmtpTestServer();
  domain = await server.createDomain(undefined, { sendRateLimitPerMinute: 1000 });
});
afterAll(async () => {
  await server?.close();
});

async function putPolicy(mailboxId: string, policy: object): Promise<void> {
  const res = await server.api(domain.token).put(`/api/domain/mailboxes/${mailboxId}/policy`, policy);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function lastAudit(mailboxId: string) {
  const [last] = await server.runtime.services.auditStore.page({ mailboxId }, null, 1);
  return last;
}

describe('SMTP submission: the policy of one transaction', () => {
  it('a policy changed after MAIL FROM decides the message at the end of DATA', async () => {
    const m = await server.createMailbox(domain.token, `late-rules@${domain.name}`);
    const wire = await loggedInWire(server, m);
    await wire.cmd(`MAIL FROM:<${m.address}>`, 250);
    await putPolicy(m.mailboxId, { blockedRecipients: ['@ext.test'] });
    // RCPT TO judges by the rules read with this transaction's MAIL FROM…
    await wire.cmd('RCPT TO:<someone@ext.test>', 250);
    await wire.cmd('DATA', 354);
    const reply = await wire.cmd(rfc5322({ from: m.address, to: 'someone@ext.test' }) + '\r\n.');
    // …and end of DATA by rules read then: refused, audited, nothing stored.
    expect(reply.last).toMatch(/^550 5\.7\.1 /);
    expect(await lastAudit(m.mailboxId)).toMatchObject({ decision: 'refused', rule: 'blockedRecipients' });
    const list = await server.api(m.token).get('/api/messages?direction=outbound');
    expect(list.status).toBe(200);
    expect(list.body.data.items).toHaveLength(0);
    // The next transaction reads the new rules at its MAIL FROM: refused at RCPT TO.
    await wire.cmd(`MAIL FROM:<${m.address}>`, 250);
    const rcpt = await wire.cmd('RCPT TO:<someone@ext.test>');
    expect(rcpt.last).toMatch(/^550 5\.7\.1 /);
    await wire.cmd('QUIT', 221);
  });

  it('rules that count new recipients see the contacts at RCPT TO', async () => {
    const m = await server.createMailbox(domain.token, `counting@${domain.name}`);
    await putPolicy(m.mailboxId, { maxNewRecipientsPerDay: 2 });
    const first = await server
      .api(m.token)
      .post('/api/messages/send', { toAddress: ['known@ext.test'], subject: 's', bodyText: 'b' });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    // One new recipient today; known@ is contacted, so only fresh@ is new: 1 + 1 ≤ 2.
    const wire = await loggedInWire(server, m);
    await wire.cmd(`MAIL FROM:<${m.address}>`, 250);
    await wire.cmd('RCPT TO:<known@ext.test>', 250);
    await wire.cmd('RCPT TO:<fresh@ext.test>', 250);
    // A third, also new, crosses the limit at its RCPT TO.
    const third = await wire.cmd('RCPT TO:<third@ext.test>');
    expect(third.last).toMatch(/^550 5\.7\.1 /);
    expect(await lastAudit(m.mailboxId)).toMatchObject({ decision: 'refused', rule: 'maxNewRecipientsPerDay' });
    await wire.cmd('DATA', 354);
    const reply = await wire.cmd(rfc5322({ from: m.address, to: 'known@ext.test, fresh@ext.test' }) + '\r\n.');
    expect(reply.code).toBe(250);
    await wire.cmd('QUIT', 221);
  });
});
