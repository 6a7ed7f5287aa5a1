import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSmtpTestServer, loggedInWire } from '../smtp/world.js';
import { rfc5322 } from '../smtp/smtp-wire.js';
import type { TestServer } from '../support/harness.js';
import { call, mcpClient, textOf } from '../mcp/helpers.js';
import { CHANNELS } from '../../src/core/state/audit/audit.schemas.js';
import type { SendActor } from '../../src/core/flows/policy/outbound-policy.js';
import type { MailboxPolicyInput, TokenPolicy } from '../../src/core/access/policy.schemas.js';

// The policy matrix: every rule set × every send channel × token chain depth, generated,
// each cell's outcome compared with the expectation and with the audit trail's record of it.
// A channel added to the core's CHANNELS without a driver here fails the first test.

type Outcome = { kind: 'accepted' } | { kind: 'held' } | { kind: 'refused'; rule: string };
type Depth = 'mailbox' | 'child' | 'grandchild';
type SendChannel = SendActor['channel'];

const HOME = () => world.domain;
const accepted: Outcome = { kind: 'accepted' };
const held: Outcome = { kind: 'held' };
const refused = (rule: string): Outcome => ({ kind: 'refused', rule });

interface RuleSet {
  name: string;
  /** Where the rule sits: the mailbox policy (PUT), or the child token's own policy. */
  where: 'mailbox' | 'token';
  policy: MailboxPolicyInput & TokenPolicy;
  /** Recipients of the attempt, unique per cell (tag). */
  to: (tag: string) => string[];
  expect: Outcome;
}

const ext = (tag: string, n = 1) => Array.from({ length: n }, (_, i) => `r${i}-${tag}@ext.test`);
const home = (tag: string) => [`h-${tag}@${HOME()}`];

const MAILBOX_RULES: Omit<RuleSet, 'where'>[] = [
  { name: 'default policy', policy: {}, to: (t) => ext(t), expect: accepted },
  {
    name: 'block an address',
    policy: { blockedRecipients: ['blocked@ext.test'] },
    to: () => ['blocked@ext.test'],
    expect: refused('blockedRecipients'),
  },
  {
    name: 'block a domain',
    policy: { blockedRecipients: ['@ext.test'] },
    to: (t) => ext(t),
    expect: refused('blockedRecipients'),
  },
  {
    name: 'block subdomains',
    policy: { blockedRecipients: ['@*.ext.test'] },
    to: (t) => [`x-${t}@deep.ext.test`],
    expect: refused('blockedRecipients'),
  },
  {
    name: 'allow only home',
    policy: { allowedRecipients: ['@home.invalid'] },
    to: (t) => ext(t),
    expect: refused('allowedRecipients'),
  },
  { name: 'allow ext', policy: { allowedRecipients: ['@ext.test'] }, to: (t) => ext(t), expect: accepted },
  {
    name: 'external sending off, external recipient',
    policy: { externalSending: false },
    to: (t) => ext(t),
    expect: refused('externalSending'),
  },
  { name: 'external sending off, home recipient', policy: { externalSending: false }, to: home, expect: accepted },
  {
    name: 'max recipients per message',
    policy: { maxRecipientsPerMessage: 1 },
    to: (t) => ext(t, 2),
    expect: refused('maxRecipientsPerMessage'),
  },
  {
    name: 'max new recipients per day',
    policy: { maxNewRecipientsPerDay: 1 },
    to: (t) => ext(t, 2),
    expect: refused('maxNewRecipientsPerDay'),
  },
  { name: 'approval external, external', policy: { approval: 'external' }, to: (t) => ext(t), expect: held },
  { name: 'approval external, home', policy: { approval: 'external' }, to: home, expect: accepted },
  { name: 'approval new-recipients', policy: { approval: 'new-recipients' }, to: (t) => ext(t), expect: held },
  { name: 'approval all', policy: { approval: 'all' }, to: home, expect: held },
];
// The token variants: the rules a token may carry (recipient fields and approval).
const TOKEN_RULES = MAILBOX_RULES.filter((r) => r.name !== 'default policy');
const RULE_SETS: RuleSet[] = [
  ...MAILBOX_RULES.map((r) => ({ ...r, where: 'mailbox' as const })),
  ...TOKEN_RULES.map((r) => ({ ...r, where: 'token' as const })),
];
const DEPTHS: Depth[] = ['mailbox', 'child', 'grandchild'];

/** A token rule binds the child and, inherited, the grandchild; the mailbox's own token is not bound by it. */
const expected = (r: RuleSet, depth: Depth): Outcome =>
  r.where === 'token' && depth === 'mailbox' ? accepted : r.expect;

interface Sender {
  address: string;
  mailboxId: string;
  token: string;
}

/** One driver per send channel: attempt the send, return what the channel answered. */
const drivers: Record<SendChannel, (s: Sender, to: string[]) => Promise<Outcome>> = {
  async http(s, to) {
    const res = await server.api(s.token).post('/api/messages/send', { toAddress: to, subject: 'm', bodyText: 'b' });
    if (res.status === 202) return res.body.data.status === 'pending_approval' ? held : accepted;
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    return refused(ruleIn(res.body.errMsg!));
  },
  async mcp(s, to) {
    const client = await mcpClient(server, s.token, { listTools: false });
    try {
      const result = await call(client, 'send_mail', { toAddress: to, subject: 'm', bodyText: 'b' });
      const body = JSON.parse(textOf(result));
      if (!result.isError) return body.status === 'pending_approval' ? held : accepted;
      expect(body.code).toBe(403);
      return refused(ruleIn(body.errMsg));
    } finally {
      await client.close();
    }
  },
  async smtp(s, to) {
    const wire = await loggedInWire(server, { address: s.address, token: s.token });
    try {
      await wire.cmd(`MAIL FROM:<${s.address}>`, 250);
      let refusedRcpt = false;
      let ok = 0;
      for (const r of to) {
        const reply = await wire.cmd(`RCPT TO:<${r}>`);
        if (reply.code === 250) ok++;
        else {
          // RFC 5321 §4.1.1.3: this recipient only; the policy's code is 550 5.7.1.
          expect(reply.last).toMatch(/^550 5\.7\.1 /);
          refusedRcpt = true;
        }
      }
      if (refusedRcpt) {
        await wire.cmd('RSET', 250);
        return refused(await lastRefusalRule(s.mailboxId));
      }
      await wire.cmd('DATA', 354);
      wire.write(`${rfc5322({ from: s.address, to: to.join(', ') })}.\r\n`);
      const reply = await wire.reply();
      expect(reply.code).toBe(250);
      expect(ok).toBe(to.length);
      return /Held for approval/.test(reply.last) ? held : accepted;
    } finally {
      wire.close();
    }
  },
};

const RULE_NAMES = [
  'blockedRecipients',
  'allowedRecipients',
  'externalSending',
  'maxRecipientsPerMessage',
  'maxNewRecipientsPerDay',
];
const ruleIn = (errMsg: string) => RULE_NAMES.find((r) => errMsg.includes(`policy rule ${r}`)) ?? `unnamed: ${errMsg}`;

/** SMTP replies carry the catalog text; the rule of a RCPT refusal is read from the audit trail. */
async function lastRefusalRule(mailboxId: string): Promise<string> {
  const [last] = await server.runtime.services.auditStore.page({ mailboxId }, null, 1);
  return last?.decision === 'refused' ? (last.rule ?? 'none') : 'none';
}

let server: TestServer;
const world = { domain: '', domainToken: '' };

async function mailboxFor(r: RuleSet, depth: Depth): Promise<Sender> {
  const created = await server.createMailbox(world.domainToken, `m${randomBytes(4).toString('hex')}@${world.domain}`);
  if (r.where === 'mailbox') {
    const res = await server.api(world.domainToken).put(`/api/domain/mailboxes/${created.mailboxId}/policy`, r.policy);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  let token = created.token;
  const levels = depth === 'mailbox' ? 0 : depth === 'child' ? 1 : 2;
  for (let level = 1; level <= levels; level++) {
    const policy = r.where === 'token' && level === 1 ? r.policy : undefined;
    const res = await server.api(token).post('/api/mailbox/access-tokens', {
      tokenName: `depth-${level}`,
      scopes: ['MailboxRead', 'MailboxSend', 'TokenManage'],
      ...(policy ? { policy } : {}),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.policy).toEqual(policy ?? null);
    token = res.body.data.accessToken;
  }
  return { address: created.address, mailboxId: created.mailboxId, token };
}

beforeAll(async () => {
  server = await startSmtpTestServer();
  const d = await server.createDomain();
  world.domain = d.name;
  world.domainToken = d.token;
}, 120_000);
afterAll(() => server?.close());

describe('policy matrix: rule set × channel × token chain depth', () => {
  it('has a driver for every send channel of the core, and no other', () => {
    // The worker and approval links decide held mail; they never send.
    expect(Object.keys(drivers).sort()).toEqual(CHANNELS.filter((c) => c !== 'worker' && c !== 'approval-link').sort());
  });

  it('every cell answers as expected and the audit trail records it (0 mismatches)', async () => {
    const mismatches: string[] = [];
    let cells = 0;
    for (const r of RULE_SETS) {
      for (const depth of DEPTHS) {
        const sender = await mailboxFor(r, depth);
        for (const channel of Object.keys(drivers) as SendChannel[]) {
          const tag = randomBytes(4).toString('hex');
          const want = expected(r, depth);
          const got = await drivers[channel](sender, r.to(tag));
          cells++;
          const audit = await server.runtime.services.auditStore.page({ mailboxId: sender.mailboxId }, null, 1);
          const decision = audit[0] ? `${audit[0].decision}/${audit[0].channel}` : 'none';
          const wantDecision = `${want.kind}/${channel}`;
          if (JSON.stringify(got) !== JSON.stringify(want) || decision !== wantDecision)
            mismatches.push(
              `${r.where}:${r.name} × ${channel} × ${depth}: got ${JSON.stringify(got)} (audit ${decision}), want ${JSON.stringify(want)}`,
            );
        }
      }
    }
    expect(cells).toBe(RULE_SETS.length * DEPTHS.length * Object.keys(drivers).length);
    expect(mismatches).toEqual([]);
  }, 600_000);
});
