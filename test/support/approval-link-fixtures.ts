import { sql } from '../../src/storage/database.js';
import type { TestServer } from './harness.js';
import { seedHeldMessage, type SeededMessage, type Tenants } from './tenants.js';

/** What the cases act in: the matrix's world (route-fixtures.ts), as far as they need it. */
interface MatrixWorld {
  server: TestServer;
  t: Tenants;
}

export const FIXTURE_APPROVER = 'approver@approvers.example';

/**
 * A held message of `mailbox` with a live approval link of `approver`, written straight to storage
 * as the notice worker leaves it (minted, mailed): the approver is added to the mailbox's policy,
 * the credential minted with the server's own key. For tests of the link routes that do not need
 * the mail itself (the authorization matrix).
 */
export async function seedApprovalLink(
  server: TestServer,
  mailbox: { mailboxId: string; address: string; domainId: string },
  o: { approver?: string; expiresInMs?: number } = {},
): Promise<SeededMessage & { credential: string; approver: string }> {
  const services = server.runtime.services;
  const approver = o.approver ?? FIXTURE_APPROVER;
  const held = await seedHeldMessage(server, mailbox);
  const now = services.clock.now();
  const expiresAt = new Date(now.getTime() + (o.expiresInMs ?? services.config.APPROVAL_TTL));
  const { credential, secretHash } = services.approvalCredentials.mint(held.messageId);
  await services.db.tx(async (trx) => {
    await sql`update mailbox set policy = coalesce(policy, '{}'::jsonb) || jsonb_build_object('approverAddresses',
        (select coalesce(jsonb_agg(distinct a), '[]'::jsonb) from (
          select jsonb_array_elements_text(coalesce(policy -> 'approverAddresses', '[]'::jsonb)) as a
          union select ${approver}::text) x))
      where id = ${mailbox.mailboxId}`.execute(trx);
    await sql`insert into approval_link (message_id, approver_address, mailbox_id, secret_hash, expires_at, status,
        attempts, run_after, sent_at, created_at)
      values (${held.messageId}, ${approver}, ${mailbox.mailboxId}, ${secretHash}, ${expiresAt}, 'sent', 1, ${now}, ${now}, ${now})`.execute(
      trx,
    );
  });
  return { ...held, credential, approver };
}

/** A case of the approval links' own matrix: what one attempt with a link is answered. */
export interface LinkCase {
  name: string;
  attempt(w: MatrixWorld): Promise<{ status: number; errorCode: string | null }>;
  expected: { status: number; errorCode: string | null };
}

const answer = (res: { status: number; body: { errorCode?: string | null } }) => ({
  status: res.status,
  errorCode: res.body?.errorCode ?? null,
});
const view = (w: MatrixWorld, credential: string) => w.server.api().post('/api/approval-links/view', { credential });
const decide = (w: MatrixWorld, credential: string, decision: 'approve' | 'reject' = 'reject') =>
  w.server.api().post('/api/approval-links/decision', { credential, decision });
/** The credential with its signed message id replaced: what pointing a link at another message takes. */
const pointedAt = (credential: string, messageId: string) => [messageId, ...credential.split('.').slice(1)].join('.');
const approvalOf = async (w: MatrixWorld, messageId: string) =>
  (
    await w.server.runtime.services.db.one(
      sql<{ approval_status: string | null }>`select approval_status from message where id = ${messageId}`,
    )
  )?.approval_status;

/**
 * A link is the one authority on its route: it decides its own message once, while held and
 * unexpired, and nothing else. Each attempt acts on A1's link; the cross-tenant ones aim it at a
 * held message of A2 (same domain) or B1 (another domain) and also check that message is untouched.
 */
export const APPROVAL_LINK_CASES: LinkCase[] = [
  {
    name: 'a fresh link opens its message',
    attempt: async (w) => answer(await view(w, (await seedApprovalLink(w.server, w.t.A1)).credential)),
    expected: { status: 200, errorCode: null },
  },
  {
    name: 'a fresh link decides its message',
    attempt: async (w) => answer(await decide(w, (await seedApprovalLink(w.server, w.t.A1)).credential)),
    expected: { status: 200, errorCode: null },
  },
  {
    name: 'a used link decides nothing again',
    attempt: async (w) => {
      const link = await seedApprovalLink(w.server, w.t.A1);
      await decide(w, link.credential, 'reject');
      return answer(await decide(w, link.credential, 'approve'));
    },
    expected: { status: 410, errorCode: 'APPROVAL_LINK_USED' },
  },
  {
    name: 'an expired link decides nothing',
    attempt: async (w) =>
      answer(await decide(w, (await seedApprovalLink(w.server, w.t.A1, { expiresInMs: -1_000 })).credential)),
    expected: { status: 410, errorCode: 'APPROVAL_LINK_EXPIRED' },
  },
  {
    name: 'a link with a tampered signature',
    attempt: async (w) => {
      const { credential } = await seedApprovalLink(w.server, w.t.A1);
      const last = credential.at(-2) === 'A' ? 'B' : 'A';
      return answer(await decide(w, `${credential.slice(0, -2)}${last}${credential.slice(-1)}`));
    },
    expected: { status: 404, errorCode: 'APPROVAL_LINK_INVALID' },
  },
  ...(['A2', 'B1'] as const).map((victim): LinkCase => ({
    name: `A1's link pointed at a held message of ${victim === 'A2' ? 'another mailbox of its domain' : 'another domain'}`,
    attempt: async (w) => {
      const { credential } = await seedApprovalLink(w.server, w.t.A1);
      const target = await seedHeldMessage(w.server, w.t[victim]);
      const res = answer(await decide(w, pointedAt(credential, target.messageId), 'approve'));
      return (await approvalOf(w, target.messageId)) === 'pending' ? res : { status: 200, errorCode: 'DECIDED' };
    },
    expected: { status: 404, errorCode: 'APPROVAL_LINK_INVALID' },
  })),
  {
    name: 'a link of a message a token decided first',
    attempt: async (w) => {
      const link = await seedApprovalLink(w.server, w.t.A1);
      const byToken = await w.server.api(w.t.X.token).post(`/api/messages/${link.messageId}/approve`);
      if (byToken.status !== 200) return answer(byToken);
      return answer(await decide(w, link.credential, 'reject'));
    },
    expected: { status: 409, errorCode: 'APPROVAL_LINK_DECIDED' },
  },
];
