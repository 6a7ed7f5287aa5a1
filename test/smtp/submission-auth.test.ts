import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { mailboxTokenWith, rowsOf } from '../delivery/helpers.js';
import { mintToken } from '../support/tenants.js';
import { SmtpWire } from './smtp-wire.js';
import { addAlias, addIdentity, startSmtpTestServer, submissionPort } from './world.js';

// The spec's SMTP rules (Authentication: SMTP rules 1–5, Errors: the SMTP sentence): every
// violation is exactly `535 5.7.8 Authentication credentials invalid`.
const INVALID = '535 5.7.8 Authentication credentials invalid';

let server: TestServer;
let x: { domainId: string; name: string; token: string };
let y: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
let bob: { mailboxId: string; address: string; token: string };
let carol: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);

beforeAll(async () => {
  server = await startSmtpTestServer({ env: { AUTH_FAILURES_PER_15M: '1000' } });
  x = await server.createDomain();
  y = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  bob = await server.createMailbox(x.token, `bob@${x.name}`, 'Bob');
  carol = await server.createMailbox(y.token, `carol@${y.name}`, 'Carol');
  await addAlias(server, alice.mailboxId, `sales@${x.name}`);
  await addAlias(server, alice.mailboxId, `old@${x.name}`, { active: false });
  await addIdentity(server, alice.mailboxId, `alice.personal@${x.name}`);
});
afterAll(async () => {
  await server?.close();
});

async function authReply(user: string, pass: string, method: 'PLAIN' | 'LOGIN' = 'PLAIN'): Promise<string> {
  const wire = await SmtpWire.connect(submissionPort(server));
  try {
    return (await wire.login(user, pass, method)).last;
  } finally {
    wire.close();
  }
}

describe('SMTP AUTH on submission (spec SMTP rules)', () => {
  it('accepts a mailbox token for its primary address, its active alias and its other active identity, with PLAIN and LOGIN', async () => {
    expect(await authReply(alice.address, alice.token)).toMatch(/^235 2\.7\.0 /);
    expect(await authReply(alice.address, alice.token, 'LOGIN')).toMatch(/^235 2\.7\.0 /);
    expect(await authReply(`sales@${x.name}`, alice.token)).toMatch(/^235 /);
    expect(await authReply(`alice.personal@${x.name}`, alice.token)).toMatch(/^235 /);
    expect(await authReply(alice.address.toUpperCase(), alice.token)).toMatch(/^235 /);
  });

  it('accepts a domain token for a primary address or an active alias of its own domain', async () => {
    expect(await authReply(alice.address, x.token)).toMatch(/^235 /);
    expect(await authReply(`sales@${x.name}`, x.token, 'LOGIN')).toMatch(/^235 /);
    expect(await authReply(bob.address, x.token)).toMatch(/^235 /);
  });

  it('answers exactly 535 5.7.8 to every violation', async () => {
    const noSend = await mailboxTokenWith(server, alice.mailboxId, ['MailboxRead', 'AttachmentWrite']);
    const domainNoSend = (
      await mintToken(server, {
        kind: 'domain',
        domainId: x.domainId,
        mailboxId: null,
        scopes: ['DomainManage', 'MailboxRead'],
      })
    ).token;
    const expired = (
      await mintToken(server, {
        kind: 'mailbox',
        domainId: x.domainId,
        mailboxId: alice.mailboxId,
        scopes: ['MailboxSend'],
        expiresAt: new Date(Date.now() - 1000),
      })
    ).token;
    const disabled = (
      await mintToken(server, {
        kind: 'mailbox',
        domainId: x.domainId,
        mailboxId: alice.mailboxId,
        scopes: ['MailboxSend'],
        disabled: true,
      })
    ).token;
    const cases: Array<[string, string, string]> = [
      ['username is not an address', 'alice', alice.token],
      ['username is an address literal', `alice@[127.0.0.1]`, alice.token],
      ['password is an unknown well-formed token', alice.address, alice.token.slice(0, -6) + 'AAAAAA'],
      ['token expired', alice.address, expired],
      ['token disabled', alice.address, disabled],
      ['mailbox token lacks MailboxSend', alice.address, noSend],
      ['domain token lacks MailboxSend', alice.address, domainNoSend],
      ['username is no sender identity', `nobody@${x.name}`, alice.token],
      ['identity of an inactive alias', `old@${x.name}`, alice.token],
      ['mailbox token names another mailbox of its domain', bob.address, alice.token],
      ['mailbox token names a mailbox of another domain', carol.address, alice.token],
      ['domain token names a mailbox of another domain', carol.address, x.token],
      ['domain token names an identity that is neither primary nor alias', `alice.personal@${x.name}`, x.token],
      ['empty password', alice.address, ''],
    ];
    const wrong: string[] = [];
    for (const [name, user, pass] of cases) {
      for (const method of ['PLAIN', 'LOGIN'] as const) {
        const reply = await authReply(user, pass, method);
        if (reply !== INVALID) wrong.push(`${name} (${method}): ${reply}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('answers 535 5.7.8 with a hint that a token is needed when the password is not token-shaped', async () => {
    const hint = `${INVALID}: the password must be an access token (mbxm_... or mbxd_...)`;
    for (const method of ['PLAIN', 'LOGIN'] as const) {
      expect(await authReply(alice.address, 'agent-password-123', method)).toBe(hint);
      expect(await authReply(alice.address, 'hunter2', method)).toBe(hint);
    }
    // A token-shaped password keeps the plain reply: the hint is for people typing a password.
    expect(await authReply(alice.address, alice.token.slice(0, -6) + 'AAAAAA')).toBe(INVALID);
  });

  it('stops AUTH for a disabled mailbox and for a disabled identity at once', async () => {
    const dave = await server.createMailbox(x.token, `dave@${x.name}`);
    expect(await authReply(dave.address, dave.token)).toMatch(/^235 /);
    await q`update sender_identity set is_active = false where mailbox_id = ${dave.mailboxId}`;
    expect(await authReply(dave.address, dave.token)).toBe(INVALID);
    await q`update sender_identity set is_active = true where mailbox_id = ${dave.mailboxId}`;
    await q`update mailbox set disabled_at = now() where id = ${dave.mailboxId}`;
    expect(await authReply(dave.address, x.token)).toBe(INVALID);
  });
});
