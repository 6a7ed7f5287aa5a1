import { mintTokenPlaintext } from '../../src/core/access/token-format.js';
import { DOMAIN_TOKEN_SCOPES, MAILBOX_TOKEN_SCOPES, type Scope, type TokenKind } from '../../src/core/access/scopes.js';
import { mintToken, seedHeldMessage, seedMessage, type MailboxFixture } from './tenants.js';
import { send, type FixtureCaller, type MatrixWorld } from './route-fixtures.js';

// The rows of the authorization matrix, derived from what an entry point declares (auth, token
// kinds, scope) and from its fixture's answers for another domain and another mailbox. HTTP routes
// (test/auth/authorization-matrix.test.ts), MCP tools and the Socket.IO handshake
// (test/reliability/authorization.test.ts) all run these same rows, so the channels are held to
// one expectation.

export type Expected = number | 'success';

/** What an entry point declares; a RouteSpec is one. */
export interface Guarded {
  auth: 'bearer' | 'none';
  tokenKinds: readonly TokenKind[];
  scope?: Scope | undefined;
  /** The scope a domain token needs where it differs from `scope`. */
  domainScope?: Scope | undefined;
}

/** The answers that depend on the entry point's data rather than on its declaration. */
export interface TenantAnswers {
  foreignDomain: 403 | 404 | 'success';
  otherMailbox?: 400 | 404 | 'success' | undefined;
}

export interface Caller {
  kind: TokenKind;
  scopes: readonly Scope[];
  authorization: string;
}

export interface Row {
  name: string;
  caller(w: MatrixWorld): Promise<Caller | { authorization?: string }>;
  expected: Expected;
  /** Build the request as for this caller instead of the row's own (another mailbox names A1). */
  buildAs?: FixtureCaller;
}

export const ALL_SCOPES: Record<TokenKind, readonly Scope[]> = {
  mailbox: MAILBOX_TOKEN_SCOPES,
  domain: DOMAIN_TOKEN_SCOPES,
};
export const bearer = (token: string): string => `Bearer ${token}`;

/** Mints the row's token: kind, scopes, the domain (X, or Y when foreign), its mailbox, expiry and state. */
export async function caller(
  w: MatrixWorld,
  kind: TokenKind,
  o: {
    scopes?: readonly Scope[];
    foreign?: boolean;
    expired?: boolean;
    disabled?: boolean;
    mailbox?: MailboxFixture;
  } = {},
): Promise<Caller> {
  const scopes = o.scopes ?? ALL_SCOPES[kind];
  const mailbox = o.mailbox ?? w.t.A1;
  const domainId = o.mailbox ? o.mailbox.domainId : (o.foreign ? w.t.Y : w.t.X).domainId;
  const now = w.server.runtime.services.clock.now().getTime();
  const { token } = await mintToken(w.server, {
    kind,
    domainId,
    mailboxId: kind === 'mailbox' ? mailbox.mailboxId : null,
    scopes,
    ...(o.expired ? { expiresAt: new Date(now - 60_000) } : {}),
    disabled: o.disabled ?? false,
  });
  return { kind, scopes, authorization: bearer(token) };
}

/** Every row for one entry point, each with its expected status. */
export function matrixRows(g: Guarded, answers: TenantAnswers): Row[] {
  if (g.auth === 'none') {
    // Credentials are the body; any Authorization header must simply be ignored.
    return [
      { name: 'no token', caller: async () => ({}), expected: 'success' },
      { name: 'malformed token', caller: async () => ({ authorization: 'Bearer nope' }), expected: 'success' },
      { name: 'mailbox token', caller: (w) => caller(w, 'mailbox'), expected: 'success' },
      { name: 'domain token', caller: (w) => caller(w, 'domain'), expected: 'success' },
    ];
  }
  const own = g.tokenKinds[0]!;
  const kindStatus = (k: TokenKind): Expected => (g.tokenKinds.includes(k) ? 'success' : 403);
  const servesMailboxes = g.tokenKinds.includes('mailbox');
  if (servesMailboxes && answers.otherMailbox === undefined)
    throw new Error('a fixture serving mailbox tokens needs otherMailbox');
  const otherMailbox: Expected = servesMailboxes ? answers.otherMailbox! : 403;
  const namingA1: FixtureCaller = { kind: 'domain', scopes: ALL_SCOPES.mailbox };
  const rows: Row[] = [
    { name: 'no token', caller: async () => ({}), expected: 401 },
    { name: 'malformed token', caller: async () => ({ authorization: 'Bearer not-a-token' }), expected: 401 },
    {
      name: 'unknown well-formed token',
      caller: async () => ({ authorization: bearer(mintTokenPlaintext(own)) }),
      expected: 401,
    },
    { name: `expired ${own} token`, caller: (w) => caller(w, own, { expired: true }), expected: 401 },
    { name: `disabled ${own} token`, caller: (w) => caller(w, own, { disabled: true }), expected: 401 },
    { name: 'mailbox token', caller: (w) => caller(w, 'mailbox'), expected: kindStatus('mailbox') },
    { name: 'domain token', caller: (w) => caller(w, 'domain'), expected: kindStatus('domain') },
    {
      name: 'domain token of another domain',
      caller: (w) => caller(w, 'domain', { foreign: true }),
      expected: g.tokenKinds.includes('domain') ? answers.foreignDomain : 403,
    },
    {
      name: 'mailbox token of another mailbox (same domain)',
      caller: (w) => caller(w, 'mailbox', { mailbox: w.t.A2 }),
      expected: otherMailbox,
      buildAs: namingA1,
    },
    {
      name: "mailbox token of another domain's mailbox",
      caller: (w) => caller(w, 'mailbox', { mailbox: w.t.B1 }),
      expected: otherMailbox,
      buildAs: namingA1,
    },
  ];
  // Removing the declared scope is a 403; removing any other scope must not matter.
  for (const kind of g.tokenKinds) {
    for (const missing of ALL_SCOPES[kind]) {
      rows.push({
        name: `${kind} token without ${missing}`,
        caller: (w) => caller(w, kind, { scopes: ALL_SCOPES[kind].filter((s) => s !== missing) }),
        expected: missing === (kind === 'domain' ? (g.domainScope ?? g.scope) : g.scope) ? 403 : 'success',
      });
    }
  }
  return rows;
}

/** The caller shape a fixture builds its request for, for a row. */
export function buildCaller(row: Row, who: Caller | { authorization?: string }, g: Guarded): FixtureCaller {
  if (row.buildAs) return row.buildAs;
  if ('kind' in who) return who;
  const kind = g.tokenKinds[0] ?? 'mailbox';
  return { kind, scopes: ALL_SCOPES[kind] };
}

/**
 * Attacks the route declarations cannot express, each run over HTTP by the matrix test: a token
 * deciding its own held send (or its child doing it), a TokenManage-only token governing a later,
 * wider token, and a domain token naming another mailbox on a write to one mailbox's object.
 * `attempt` answers the status and errorCode of the attack; `expected` is what the service must say.
 */
export interface AttackCase {
  name: string;
  attempt(w: MatrixWorld): Promise<{ status: number; errorCode: string | null }>;
  expected: { status: number; errorCode: string | null };
}

const answer = (res: { status: number; body: { errorCode?: string | null } }) => ({
  status: res.status,
  errorCode: res.body?.errorCode ?? null,
});

/** A1's token with every mailbox scope (MailboxApprove included) and a held send it wrote. */
async function ownHeldSend(w: MatrixWorld) {
  const sender = await mintToken(w.server, { kind: 'mailbox', domainId: w.t.X.domainId, mailboxId: w.t.A1.mailboxId });
  const held = await seedHeldMessage(w.server, w.t.A1, sender.tokenId);
  return { sender, held };
}

/** A TokenManage-only token of A1 and a later token of A1 with more scopes. */
async function narrowAndWide(w: MatrixWorld) {
  const mint = (scopes: Scope[]) =>
    mintToken(w.server, { kind: 'mailbox', domainId: w.t.X.domainId, mailboxId: w.t.A1.mailboxId, scopes });
  const narrow = await mint(['TokenManage']);
  const wide = await mint(['MailboxRead', 'MailboxApprove', 'TokenManage']);
  return { narrow, wide };
}

const selfForbidden = { status: 403, errorCode: 'APPROVAL_SELF_FORBIDDEN' };
const escalation = { status: 403, errorCode: 'SCOPE_MISSING' };
const mismatch = { status: 400, errorCode: 'TARGET_MAILBOX_MISMATCH' };

export const ATTACK_CASES: AttackCase[] = [
  ...(['approve', 'reject'] as const).flatMap((verb): AttackCase[] => [
    {
      name: `${verb} by the token that made the held send (holding MailboxApprove)`,
      attempt: async (w) => {
        const { sender, held } = await ownHeldSend(w);
        return answer(
          await send(w.server, 'POST', { path: `/api/messages/${held.messageId}/${verb}` }, bearer(sender.token)),
        );
      },
      expected: selfForbidden,
    },
    {
      name: `${verb} by a child of the token that made the held send`,
      attempt: async (w) => {
        const { sender, held } = await ownHeldSend(w);
        const child = await mintToken(w.server, {
          kind: 'mailbox',
          domainId: w.t.X.domainId,
          mailboxId: w.t.A1.mailboxId,
          scopes: ['MailboxApprove'],
          parentTokenId: sender.tokenId,
        });
        return answer(
          await send(w.server, 'POST', { path: `/api/messages/${held.messageId}/${verb}` }, bearer(child.token)),
        );
      },
      expected: selfForbidden,
    },
    {
      name: `${verb} by another MailboxApprove token of the mailbox`,
      attempt: async (w) => {
        const { held } = await ownHeldSend(w);
        const human = await caller(w, 'mailbox', { scopes: ['MailboxApprove'] });
        return answer(
          await send(w.server, 'POST', { path: `/api/messages/${held.messageId}/${verb}` }, human.authorization),
        );
      },
      expected: { status: 200, errorCode: null },
    },
    {
      name: `${verb} by a domain token naming another mailbox of its domain`,
      attempt: async (w) => {
        const { held } = await ownHeldSend(w);
        const domain = await caller(w, 'domain');
        const req = { path: `/api/messages/${held.messageId}/${verb}`, json: { mailboxAddress: w.t.A2.address } };
        return answer(await send(w.server, 'POST', req, domain.authorization));
      },
      expected: mismatch,
    },
  ]),
  ...(['reveal', 'disable', 'delete'] as const).map((verb): AttackCase => ({
    name: `${verb} of a later, wider token by a TokenManage-only token`,
    attempt: async (w) => {
      const { narrow, wide } = await narrowAndWide(w);
      const path = `/api/mailbox/access-tokens/${wide.tokenId}${verb === 'delete' ? '' : `/${verb}`}`;
      return answer(await send(w.server, verb === 'delete' ? 'DELETE' : 'POST', { path }, bearer(narrow.token)));
    },
    expected: escalation,
  })),
  {
    name: 'read-state by a domain token naming another mailbox (query)',
    attempt: async (w) => {
      const m = await seedMessage(w.server, w.t.A1);
      const domain = await caller(w, 'domain');
      const req = {
        path: `/api/messages/${m.messageId}/read-state`,
        query: { mailboxAddress: w.t.A2.address },
        json: { isRead: true },
      };
      return answer(await send(w.server, 'PUT', req, domain.authorization));
    },
    expected: mismatch,
  },
];
