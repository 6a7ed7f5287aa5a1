import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock } from '../support/tenants.js';
import { rowsOf, sendBody, waitFor } from '../delivery/helpers.js';
import { startSink } from '../transport/smtp-sink.js';
import { credentialIn, decideLink, noticeInMailbox, postFrom, viewLink } from './helpers.js';

// Approval links end to end (docs/workflow.md, "Approval links"): a held send mails each approver
// of the mailbox's policy a one-time link, through local delivery (an approver hosted here) or the
// external transport (one outside, through a relay standing in for the world), and the link
// approves or rejects that message once, without a token, until the hold expires.

const BASE = 'https://approve.example.test';
const TTL = 72 * 3_600_000;
let server: TestServer;
let sink: Awaited<ReturnType<typeof startSink>>;
let clock: ManualClock;
const q = rowsOf(() => server);
let domain: { domainId: string; name: string; token: string };
let agent: { mailboxId: string; address: string; token: string };
let human: { mailboxId: string; address: string; token: string };
let bob: { mailboxId: string; address: string; token: string };
let other: { mailboxId: string; address: string; token: string };
const OUTSIDE = 'boss@remote.example';
let counter = 0;

async function setPolicy(mailboxId: string, policy: Record<string, unknown>, token = domain.token) {
  return server.api(token).put(`/api/domain/mailboxes/${mailboxId}/policy`, policy);
}

/** A send of the agent that the policy holds, with a subject of its own. */
async function held(extra: Record<string, unknown> = {}, from = agent): Promise<{ id: string; subject: string }> {
  const subject = `Quarterly numbers ${++counter}`;
  const res = await server.api(from.token).post('/api/messages/send', sendBody(bob.address, { subject, ...extra }));
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  expect(res.body.data.status).toBe('pending_approval');
  return { id: res.body.data.messageId, subject };
}

/** The link the hosted approver got for a held message. */
async function humanLink(subject: string): Promise<string> {
  return credentialIn((await noticeInMailbox(server, human.token, subject)).bodyText, BASE);
}

beforeAll(async () => {
  sink = await startSink();
  clock = new ManualClock();
  server = await startTestServer({
    roles: ['api', 'worker'],
    clock,
    env: {
      WORKER_POLL_INTERVAL: '50ms',
      PUBLIC_BASE_URL: BASE,
      SMTP_HOSTNAME: 'mx.approve.example.test',
      SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.port}?tls=insecure`,
      SEND_RATE_LIMIT_PER_MINUTE: '100000',
      // The throttle test below spends this budget from 127.0.0.2; the rest stays well inside it.
      AUTH_FAILURES_PER_15M: '40',
    },
  });
  domain = await server.createDomain();
  agent = await server.createMailbox(domain.token, `agent@${domain.name}`, 'Agent');
  human = await server.createMailbox(domain.token, `Human@${domain.name}`, 'Human');
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
  const foreign = await server.createDomain();
  other = await server.createMailbox(foreign.token, `other@${foreign.name}`, 'Other');
  const res = await setPolicy(agent.mailboxId, { approval: 'all', approverAddresses: [human.address, OUTSIDE] });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const set = await setPolicy(other.mailboxId, { approval: 'all', approverAddresses: [OUTSIDE] }, foreign.token);
  expect(set.status).toBe(200);
}, 180_000);
afterAll(async () => {
  await server?.close();
  await sink?.close();
});

describe('the policy field approverAddresses', () => {
  it('is normalised (lower case, each once), shown by both policy routes, and defaults to empty', async () => {
    const res = await setPolicy(bob.mailboxId, {
      approverAddresses: ['Ann@Example.ORG', 'ann@example.org', 'x@y.example'],
    });
    expect(res.status).toBe(200);
    expect(res.body.data.approverAddresses).toEqual(['ann@example.org', 'x@y.example']);
    expect((await server.api(bob.token).get('/api/mailbox/policy')).body.data.approverAddresses).toEqual([
      'ann@example.org',
      'x@y.example',
    ]);
    expect((await setPolicy(bob.mailboxId, {})).body.data.approverAddresses).toEqual([]);
  });

  it('refuses what is not an address, more than 10 approvers, and an address of the mailbox itself', async () => {
    for (const bad of [['not an address'], ['@example.org'], Array.from({ length: 11 }, (_, i) => `p${i}@x.example`)]) {
      const res = await setPolicy(bob.mailboxId, { approverAddresses: bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.errMsg).toContain('approverAddresses');
    }
    const own = await setPolicy(bob.mailboxId, { approverAddresses: [bob.address.toUpperCase()] });
    expect(own.status).toBe(400);
    expect(own.body).toMatchObject({ errorCode: 'VALIDATION_FAILED' });
    expect(own.body.errMsg).toContain('address of this mailbox');
  });
});

describe('the notice', () => {
  it('reaches a hosted approver in their mailbox and an outside one through the relay, each with its own link', async () => {
    const { id, subject } = await held({ ccAddresses: ['carol@remote.example'], bodyText: 'Revenue is up 12%.' });
    const notice = await noticeInMailbox(server, human.token, subject);
    expect(notice.from).toBe('approvals@mx.approve.example.test');
    expect(notice.bodyText).toContain(`Subject:  ${subject}`);
    expect(notice.bodyText).toContain(`To:       ${bob.address}`);
    expect(notice.bodyText).toContain('Cc:       carol@remote.example');
    expect(notice.bodyText).toContain('Revenue is up 12%.');
    expect(notice.bodyText).toContain('Held by:  approval:all');
    // The bootstrap token made the send: its name is what the approver sees of the agent.
    expect(notice.bodyText).toMatch(/Sent by: {2}token "[^"]+"/);
    const link = credentialIn(notice.bodyText, BASE);
    expect(link.startsWith(`${id}.`)).toBe(true);

    const outside = await waitFor(
      async () => sink.accepted.find((m) => m.to.includes(OUTSIDE) && m.raw.toString().includes(subject)),
      20_000,
      'the notice at the relay',
    );
    const raw = outside.raw.toString();
    // The null reverse-path: no bounce of the notice can come back (to the agent, or anywhere).
    expect(outside.from).toBe('');
    expect(raw).toMatch(/^Auto-Submitted: auto-generated\r?$/m);
    expect(raw).toMatch(/^DKIM-Signature: /m);
    const outsideLink = credentialIn(raw.replace(/=\r?\n/g, ''), BASE);
    expect(outsideLink).not.toBe(link);

    // The relay's 250 comes before the worker records the notice as sent.
    const rows = await waitFor(
      async () => {
        const found = await q`select approver_address, status, secret_hash, expires_at, used_at from approval_link
          where message_id = ${id} order by approver_address`;
        return found.every((r) => r.status !== 'pending') && found;
      },
      20_000,
      'both notices recorded',
    );
    expect(rows.map((r) => [r.approver_address, r.status])).toEqual([
      [OUTSIDE, 'sent'],
      [human.address.toLowerCase(), 'sent'],
    ]);
    // Kept as a hash only, and expiring with the hold.
    for (const r of rows) {
      expect(r.secret_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(link).not.toContain(r.secret_hash);
      expect(new Date(r.expires_at).getTime()).toBe(
        new Date((await q`select created_at from message where id = ${id}`)[0].created_at).getTime() + TTL,
      );
    }
  });

  it('is never the agent’s to read: no trace of the link in its mailbox, and the notice itself is not held', async () => {
    const { id, subject } = await held();
    const link = await humanLink(subject);
    const [random] = link.split('.').slice(1);
    const mine = await q`select id from message where mailbox_id = ${agent.mailboxId}
      and (body_text like ${`%${random}%`} or subject like 'Approval needed%')`;
    expect(mine).toEqual([]);
    // Nothing new was held or queued in the agent's mailbox for the notice: its one held message.
    expect(
      (
        await q`select count(*)::int as n from message where mailbox_id = ${agent.mailboxId} and subject = ${subject}`
      )[0].n,
    ).toBe(1);
    expect((await q`select count(*)::int as n from approval_link where message_id = ${id}`)[0].n).toBe(2);
    expect(
      await q`select 1 from approval_link l join message m on m.id = l.message_id where m.subject like 'Approval needed%'`,
    ).toEqual([]);
  });
});

describe('deciding through the link', () => {
  it('shows the held message without a token, then approves it once: it leaves, audited as the approver', async () => {
    const { id, subject } = await held({ bodyText: 'Please send the numbers.' });
    const link = await humanLink(subject);
    const view = await viewLink(server, link);
    expect(view.status, JSON.stringify(view.body)).toBe(200);
    expect(view.headers.get('cache-control')).toBe('no-store');
    expect(view.body.data).toMatchObject({
      messageId: id,
      mailboxAddress: agent.address,
      approverAddress: human.address.toLowerCase(),
      subject,
      fromAddress: agent.address,
      toAddresses: [bob.address],
      bodyText: 'Please send the numbers.',
      rule: 'approval:all',
      approvalStatus: 'pending',
      decidedAtTs: null,
    });
    expect(view.body.data.tokenName).toEqual(expect.any(String));
    expect(view.body.data.expiresAtTs).toBe(view.body.data.heldAtTs + TTL);

    const approve = await decideLink(server, link, 'approve', 'fine by me');
    expect(approve.status, JSON.stringify(approve.body)).toBe(200);
    expect(approve.body.data).toMatchObject({
      messageId: id,
      approvalStatus: 'approved',
      changed: true,
      decidedByTokenId: null,
    });
    await waitFor(
      async () =>
        (await q`select 1 from message where mailbox_id = ${bob.mailboxId} and subject = ${subject}`).length > 0,
      20_000,
      'delivery of the approved message',
    );

    // Single use: the link answers 410 from now on, whatever is asked.
    for (const again of [
      await decideLink(server, link, 'approve'),
      await decideLink(server, link, 'reject'),
      await viewLink(server, link),
    ]) {
      expect(again.status).toBe(410);
      expect(again.body.errorCode).toBe('APPROVAL_LINK_USED');
    }
    const audit = (await server.api(agent.token).get('/api/mailbox/audit?channel=approval-link')).body.data.items;
    expect(audit.find((e: any) => e.messageId === id)).toMatchObject({
      decision: 'approved',
      channel: 'approval-link',
      tokenId: null,
      actorAddress: human.address.toLowerCase(),
      reason: 'fine by me',
    });
    const [row] =
      await q`select used_at from approval_link where message_id = ${id} and approver_address = ${human.address.toLowerCase()}`;
    expect(row.used_at).not.toBeNull();
  });

  it('rejects: the message never leaves, and the other approver’s link now says it was decided', async () => {
    const { id, subject } = await held();
    const link = await humanLink(subject);
    const reject = await decideLink(server, link, 'reject', 'not now');
    expect(reject.status).toBe(200);
    expect(reject.body.data).toMatchObject({ approvalStatus: 'rejected', deliveryStatus: 'failed' });
    expect(await q`select 1 from outbox_job where message_id = ${id}`).toEqual([]);
    const detail = await server.api(agent.token).get(`/api/messages/${id}`);
    expect(detail.body.data.deliveries[0]).toMatchObject({ status: 'failed', remoteReply: 'rejected by approver' });

    const outside = await waitFor(async () =>
      sink.accepted.find((m) => m.to.includes(OUTSIDE) && m.raw.toString().includes(subject)),
    );
    const outsideLink = credentialIn(outside.raw.toString().replace(/=\r?\n/g, ''), BASE);
    const view = await viewLink(server, outsideLink);
    expect(view.status).toBe(200);
    expect(view.body.data.approvalStatus).toBe('rejected');
    const late = await decideLink(server, outsideLink, 'approve');
    expect(late.status).toBe(409);
    expect(late.body.errorCode).toBe('APPROVAL_LINK_DECIDED');
    expect(late.body.errMsg).toContain('already rejected');
  });

  it('a message decided by a token first: the link shows it decided and changes nothing (409)', async () => {
    const { id, subject } = await held();
    const link = await humanLink(subject);
    const approver = await server.api(domain.token).post(`/api/domain/mailboxes/${agent.mailboxId}/access-tokens`, {
      tokenName: 'human',
      scopes: ['MailboxApprove'],
    });
    expect((await server.api(approver.body.data.accessToken).post(`/api/messages/${id}/approve`)).status).toBe(200);
    const view = await viewLink(server, link);
    expect(view.body.data.approvalStatus).toBe('approved');
    expect(view.body.data.decidedAtTs).toEqual(expect.any(Number));
    const res = await decideLink(server, link, 'reject');
    expect(res.status).toBe(409);
    expect(res.body.errorCode).toBe('APPROVAL_LINK_DECIDED');
    expect((await q`select approval_status from message where id = ${id}`)[0].approval_status).toBe('approved');
    expect((await q`select used_at from approval_link where message_id = ${id} and used_at is not null`).length).toBe(
      0,
    );
  });

  it('two requests with one link at once: exactly one decides', async () => {
    const { id, subject } = await held();
    const link = await humanLink(subject);
    const answers = await Promise.all([decideLink(server, link, 'approve'), decideLink(server, link, 'reject')]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 410]);
    const decided = answers.find((a) => a.status === 200)!.body.data.approvalStatus;
    expect((await q`select approval_status from message where id = ${id}`)[0].approval_status).toBe(decided);
  });
});

describe('links that do not decide', () => {
  it('a tampered signature, a swapped message id, an unknown secret or garbage: 404 APPROVAL_LINK_INVALID', async () => {
    const { id, subject } = await held();
    const link = await humanLink(subject);
    const [messageId, random, signature] = link.split('.') as [string, string, string];
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    // Another mailbox's held message (of another domain): the credential cannot be pointed at it.
    const foreign = await held({}, other);
    const mine = await held();
    const tries = [
      `${messageId}.${random}.${flip(signature, 5)}`,
      `${messageId}.${random}.${flip(signature, signature.length - 1)}`,
      `${messageId}.${flip(random, 3)}.${signature}`,
      `${foreign.id}.${random}.${signature}`,
      `${mine.id}.${random}.${signature}`,
      `${messageId}.${random}`,
      'garbage',
    ];
    for (const credential of tries) {
      for (const res of [await viewLink(server, credential), await decideLink(server, credential, 'approve')]) {
        expect(res.status, credential).toBe(404);
        expect(res.body.errorCode).toBe('APPROVAL_LINK_INVALID');
      }
    }
    for (const m of [id, foreign.id, mine.id])
      expect((await q`select approval_status from message where id = ${m}`)[0].approval_status).toBe('pending');
    // A credential minted with another server's key is refused the same way.
    expect((await viewLink(server, `${id}.${'A'.repeat(32)}.${'A'.repeat(43)}`)).status).toBe(404);
    // The approval body is strict: no message id can ride along.
    const extra = await server
      .api()
      .post('/api/approval-links/decision', { credential: link, decision: 'approve', messageId: foreign.id });
    expect(extra.status).toBe(400);
    expect((await decideLink(server, link, 'approve')).status).toBe(200);
    expect((await q`select approval_status from message where id = ${foreign.id}`)[0].approval_status).toBe('pending');
  });

  it('an approver removed from the policy: their open link is revoked (403)', async () => {
    const { subject } = await held();
    const link = await humanLink(subject);
    expect((await setPolicy(agent.mailboxId, { approval: 'all', approverAddresses: [OUTSIDE] })).status).toBe(200);
    try {
      const res = await viewLink(server, link);
      expect(res.status).toBe(403);
      expect(res.body.errorCode).toBe('APPROVAL_LINK_REVOKED');
      expect((await decideLink(server, link, 'approve')).body.errorCode).toBe('APPROVAL_LINK_REVOKED');
    } finally {
      await setPolicy(agent.mailboxId, { approval: 'all', approverAddresses: [human.address, OUTSIDE] });
    }
  });

  it('guessing is throttled per client address like login (429 past the budget); a real link still works', async () => {
    const { subject } = await held();
    const link = await humanLink(subject);
    const from = '127.0.0.2';
    let last = 0;
    for (let i = 0; i < 41; i++) {
      last = (await postFrom(server, from, '/api/approval-links/view', { credential: `nope-${i}` })).status;
      if (i < 40) expect(last).toBe(404);
    }
    expect(last).toBe(429);
    const throttled = await postFrom(server, from, '/api/approval-links/decision', {
      credential: 'x',
      decision: 'approve',
    });
    expect(throttled.body.errorCode).toBe('AUTH_THROTTLED');
    // Only failures are refused: the approver's real link from the same address still decides.
    const real = await postFrom(server, from, '/api/approval-links/decision', {
      credential: link,
      decision: 'approve',
    });
    expect(real.status).toBe(200);
  });

  it('expires with the hold (injected clock): 410 APPROVAL_LINK_EXPIRED, and nothing is decided', async () => {
    const { id, subject } = await held();
    const link = await humanLink(subject);
    clock.advance(TTL + 1_000);
    const view = await viewLink(server, link);
    expect(view.status).toBe(410);
    expect(view.body.errorCode).toBe('APPROVAL_LINK_EXPIRED');
    const res = await decideLink(server, link, 'approve');
    expect(res.body.errorCode).toBe('APPROVAL_LINK_EXPIRED');
    expect(await q`select 1 from outbox_job where message_id = ${id}`).toEqual([]);
    // This pass or the worker role's own (same clock): expire's SKIP LOCKED leaves a row the other
    // is expiring to it, so the status is waited for rather than read once.
    await server.runtime.services.approvals.expireDue();
    const status = async () => (await q`select approval_status from message where id = ${id}`)[0].approval_status;
    await waitFor(async () => (await status()) === 'expired', 10_000, 'the hold expired');
    expect((await decideLink(server, link, 'reject')).body.errorCode).toBe('APPROVAL_LINK_EXPIRED');
  });
});

describe('what the notice worker does not mail', () => {
  const statusOf = async (id: string, address: string) =>
    (
      await q`select status, last_error from approval_link where message_id = ${id} and approver_address = ${address}`
    )[0];
  const notices = async (token: string, subject: string) =>
    ((await server.api(token).get('/api/messages?limit=100')).body.data.items as any[]).filter(
      (m) => m.subject === `Approval needed: ${subject}`,
    ).length;

  it('a notice of a message decided meanwhile is skipped, not sent', async () => {
    const { id, subject } = await held();
    await humanLink(subject);
    const approver = await server.api(domain.token).post(`/api/domain/mailboxes/${agent.mailboxId}/access-tokens`, {
      tokenName: 'human',
      scopes: ['MailboxApprove'],
    });
    expect((await server.api(approver.body.data.accessToken).post(`/api/messages/${id}/reject`)).status).toBe(200);
    // As if the worker had not come to it before the decision.
    const address = human.address.toLowerCase();
    await q`update approval_link set status = 'pending', run_after = ${clock.now()}, secret_hash = null
      where message_id = ${id} and approver_address = ${address}`;
    const row = await waitFor(async () => {
      const r = await statusOf(id, address);
      return r.status !== 'pending' && r;
    });
    expect(row).toEqual({ status: 'skipped', last_error: 'the message is no longer held' });
    expect(await notices(human.token, subject)).toBe(1);
  });

  it('never the held mailbox itself (a manifest could list it), and an unknown hosted address fails', async () => {
    const nobody = `nobody@${domain.name}`;
    // Written as a declared policy would be: PUT refuses the mailbox's own address.
    await q`update mailbox set policy = policy || jsonb_build_object('approverAddresses',
      jsonb_build_array(${agent.address}::text, ${nobody}::text, ${human.address.toLowerCase()}::text))
      where id = ${agent.mailboxId}`;
    try {
      const { id, subject } = await held();
      await humanLink(subject);
      const own = await waitFor(async () => {
        const r = await statusOf(id, agent.address);
        return r.status !== 'pending' && r;
      });
      expect(own).toEqual({ status: 'skipped', last_error: 'an address of the held mailbox itself' });
      expect(await notices(agent.token, subject)).toBe(0);
      const unknown = await waitFor(async () => {
        const r = await statusOf(id, nobody);
        return r.status !== 'pending' && r;
      });
      expect(unknown).toEqual({ status: 'failed', last_error: '550 5.1.1 No such mailbox here' });
    } finally {
      await setPolicy(agent.mailboxId, { approval: 'all', approverAddresses: [human.address, OUTSIDE] });
    }
  });

  it('a scheduled send held when it comes due notifies the approvers too', async () => {
    const subject = `Scheduled ${++counter}`;
    const res = await server
      .api(agent.token)
      .post('/api/messages/send', sendBody(bob.address, { subject, sendAt: clock.now().getTime() + 60_000 }));
    expect(res.body.data.status).toBe('scheduled');
    expect(await q`select 1 from approval_link where message_id = ${res.body.data.messageId}`).toEqual([]);
    clock.advance(61_000);
    const link = await humanLink(subject);
    expect((await viewLink(server, link)).body.data).toMatchObject({ subject, approvalStatus: 'pending' });
  });
});
