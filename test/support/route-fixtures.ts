import { randomBytes } from 'node:crypto';
import { MAILBOX_TOKEN_SCOPES, type Scope, type TokenKind } from '../../src/core/access/scopes.js';
import type { TestServer } from './harness.js';
import { createTenants, mintToken, seedHeldMessage, seedMessage, setMailboxPassword, type Tenants } from './tenants.js';
import { seedMessageWithRaw } from '../transport/download-fixtures.js';
import { insertWebhook } from '../../src/core/flows/webhooks/webhook.store.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';
import { seedApprovalLink } from './approval-link-fixtures.js';

/**
 * How to build one valid request per HTTP route, for the authorization matrix. Every request
 * acts on mailbox A1 of domain X (see tenants.ts). A route in `allRoutes` without an entry here
 * fails the matrix, so no route ships without its row.
 *
 * Where the spec leaves the mailbox selection of a domain token open, these fixtures follow its
 * general rule ("where a domain token acts on a mailbox, mailboxAddress is sent explicitly"):
 * list, bulk, send, reply and upload carry mailboxAddress; calls naming a message or thread by id
 * do not, because the id already determines the mailbox.
 */

export interface MatrixWorld {
  server: TestServer;
  t: Tenants;
  /** A1's login password. */
  password: string;
}

/** The token a row calls with; fixtures that create child tokens stay inside its scopes. */
export interface FixtureCaller {
  kind: TokenKind;
  scopes: readonly Scope[];
}

export interface RouteRequest {
  path: string;
  query?: Record<string, string | undefined>;
  json?: unknown;
  form?: () => FormData;
}

export interface RouteFixture {
  /** A valid request, built afresh per row so destructive calls each get their own object. */
  build(w: MatrixWorld, caller: FixtureCaller): Promise<RouteRequest>;
  /**
   * What a domain token of another domain (Y) gets: 404 where the request names an object or a
   * mailbox of X by id or address; a route that only reads the caller's own domain succeeds.
   */
  foreignDomain: 403 | 404 | 'success';
  /**
   * What a full-scope mailbox token of another mailbox (A2 of X, or B1 of Y) gets when the request
   * is built to name A1 (as for a domain caller): 404 where it names an object of A1 by id, 400
   * where it names A1 by mailboxAddress, success where the route only touches the caller's own
   * mailbox. Required for every route that serves mailbox tokens (the matrix checks).
   */
  otherMailbox?: 400 | 404 | 'success';
}

export const routeKey = (r: { method: string; path: string }): string => `${r.method} ${r.path}`;

export async function createMatrixWorld(server: TestServer): Promise<MatrixWorld> {
  const t = await createTenants(server);
  const password = 'correct horse battery staple';
  await setMailboxPassword(server, t.A1.mailboxId, password);
  return { server, t, password };
}

const fresh = (): string => randomBytes(4).toString('hex');
const asDomain = (c: FixtureCaller, w: MatrixWorld) => (c.kind === 'domain' ? { mailboxAddress: w.t.A1.address } : {});
const message = (w: MatrixWorld) => seedMessage(w.server, w.t.A1);
/** A later, narrow token of A1 that any TokenManage caller may manage, reveal included (scopes ⊆, expiry ≤). */
const targetToken = (w: MatrixWorld) =>
  mintToken(w.server, {
    kind: 'mailbox',
    domainId: w.t.X.domainId,
    mailboxId: w.t.A1.mailboxId,
    scopes: ['TokenManage'],
    expiresAt: new Date(w.server.runtime.services.clock.now().getTime() + 3_600_000),
  });
/** A child scope the caller holds (so creation succeeds whichever scope the row removed). */
const grantable = (c: FixtureCaller): Scope[] => [c.scopes.find((s) => MAILBOX_TOKEN_SCOPES.includes(s))!];
/** A webhook of domain X (mailboxId null) or of one of its mailboxes, written straight to storage. */
const webhookOf = async (w: MatrixWorld, mailboxId: string | null): Promise<string> => {
  const id = newId(ID_PREFIX.webhook);
  const services = w.server.runtime.services;
  await insertWebhook(
    services.db,
    { perMailbox: 1000, perDomain: 1000 },
    {
      id,
      domainId: w.t.X.domainId,
      mailboxId,
      url: 'http://127.0.0.1:9/hook',
      eventTypes: null,
      mailboxIds: null,
      secretCipher: services.webhookCipher.encrypt('whsec_AAAA', id),
      tokenId: 'tok_fixture',
      at: new Date(),
    },
  );
  return id;
};
/** A complete draft of A1, created afresh (a send, delete or change consumes or alters it). */
const draftOf = async (w: MatrixWorld): Promise<string> => {
  const res = await w.server
    .api(w.t.A1.token)
    .post('/api/drafts', { toAddress: 'someone@remote.example', subject: 'Draft', bodyText: 'Hello' });
  if (res.status !== 201) throw new Error(`draft: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.draftId;
};
const domainTokens = (w: MatrixWorld) => `/api/domain/mailboxes/${w.t.A1.mailboxId}/access-tokens`;

export const routeFixtures: Record<string, RouteFixture> = {
  // ---- mailboxes ----
  'POST /api/mailboxes': {
    build: async (w) => ({ path: '/api/mailboxes', json: { address: `m${fresh()}@${w.t.X.name}`, displayName: 'M' } }),
    foreignDomain: 403, // creating under X with Y's token: DOMAIN_FORBIDDEN, nothing of X is named
  },

  // ---- messages ----
  'GET /api/messages': {
    build: async (w, c) => {
      await message(w);
      return { path: '/api/messages', query: { ...asDomain(c, w), limit: '10' } };
    },
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'GET /api/messages/:messageId': {
    build: async (w) => ({ path: `/api/messages/${(await message(w)).messageId}` }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'PUT /api/messages/:messageId/read-state': {
    build: async (w) => ({ path: `/api/messages/${(await message(w)).messageId}/read-state`, json: { isRead: true } }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'POST /api/messages/bulk-read-state': {
    build: async (w, c) => ({
      path: '/api/messages/bulk-read-state',
      json: { ...asDomain(c, w), ids: [(await message(w)).messageId], isRead: true },
    }),
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'DELETE /api/messages/:messageId': {
    build: async (w) => ({ path: `/api/messages/${(await message(w)).messageId}` }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'POST /api/messages/bulk-delete': {
    build: async (w, c) => ({
      path: '/api/messages/bulk-delete',
      json: { ...asDomain(c, w), ids: [(await message(w)).messageId] },
    }),
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'GET /api/messages/wait': {
    // A long-poll: timeoutMs 0 only checks once, so every allowed row answers 200 timedOut at once.
    build: async (w, c) => ({ path: '/api/messages/wait', query: { ...asDomain(c, w), timeoutMs: '0' } }),
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'GET /api/messages/verification-code': {
    build: async (w, c) => ({ path: '/api/messages/verification-code', query: { ...asDomain(c, w), timeoutMs: '0' } }),
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'GET /api/messages/search': {
    build: async (w, c) => {
      await message(w);
      return { path: '/api/messages/search', query: { ...asDomain(c, w), q: 'hello is:unread' } };
    },
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'GET /api/threads/:threadId': {
    build: async (w) => ({ path: `/api/threads/${(await message(w)).threadId}` }),
    foreignDomain: 404,
    otherMailbox: 404,
  },

  // ---- send and attachments ----
  'POST /api/messages/send': {
    build: async (w) => ({
      path: '/api/messages/send',
      json: { mailboxAddress: w.t.A1.address, toAddress: 'someone@remote.example', subject: 'Hi', bodyText: 'Hello' },
    }),
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'POST /api/messages/:messageId/reply': {
    build: async (w) => ({
      path: `/api/messages/${(await message(w)).messageId}/reply`,
      json: { mailboxAddress: w.t.A1.address, subject: 'Re: Seeded', bodyText: 'Thanks' },
    }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'POST /api/messages/:messageId/forward': {
    build: async (w) => ({
      path: `/api/messages/${(await message(w)).messageId}/forward`,
      json: { mailboxAddress: w.t.A1.address, toAddress: 'someone@remote.example', bodyText: 'FYI' },
    }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'GET /api/threads': {
    build: async (w) => ({ path: '/api/threads', query: { mailboxAddress: w.t.A1.address, state: 'open' } }),
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'PUT /api/threads/:threadId/state': {
    build: async (w) => ({
      path: `/api/threads/${(await message(w)).threadId}/state`,
      json: { mailboxAddress: w.t.A1.address, state: 'needs_human' },
    }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'POST /api/messages/attachments': {
    build: async (w) => ({
      path: '/api/messages/attachments',
      form: () => {
        const f = new FormData();
        f.set('mailboxAddress', w.t.A1.address);
        f.set('file', new Blob(['hello'], { type: 'text/plain' }), 'hello.txt');
        return f;
      },
    }),
    foreignDomain: 404,
    otherMailbox: 400,
  },

  // ---- drafts (by id like a message: no mailboxAddress, the id names the mailbox) ----
  'POST /api/drafts': {
    build: async (w, c) => ({ path: '/api/drafts', json: { ...asDomain(c, w), subject: 'Draft', bodyText: 'Hello' } }),
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'GET /api/drafts': {
    build: async (w, c) => {
      await draftOf(w);
      return { path: '/api/drafts', query: { ...asDomain(c, w), limit: '10' } };
    },
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'GET /api/drafts/:draftId': {
    build: async (w) => ({ path: `/api/drafts/${await draftOf(w)}` }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'PATCH /api/drafts/:draftId': {
    build: async (w) => ({ path: `/api/drafts/${await draftOf(w)}`, json: { subject: 'Changed' } }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'DELETE /api/drafts/:draftId': {
    build: async (w) => ({ path: `/api/drafts/${await draftOf(w)}` }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'POST /api/drafts/:draftId/send': {
    build: async (w) => ({ path: `/api/drafts/${await draftOf(w)}/send` }),
    foreignDomain: 404,
    otherMailbox: 404,
  },

  // ---- token self-governance (mailbox token only: a foreign domain token is a 403 by kind) ----
  'GET /api/mailbox/access-tokens': {
    build: async () => ({ path: '/api/mailbox/access-tokens' }),
    foreignDomain: 403,
    otherMailbox: 'success',
  },
  'POST /api/mailbox/access-tokens': {
    build: async (_w, c) => ({
      path: '/api/mailbox/access-tokens',
      json: { tokenName: `t${fresh()}`, scopes: grantable(c) },
    }),
    foreignDomain: 403,
    otherMailbox: 'success',
  },
  'POST /api/mailbox/access-tokens/:tokenId/reveal': {
    build: async (w) => ({ path: `/api/mailbox/access-tokens/${(await targetToken(w)).tokenId}/reveal` }),
    foreignDomain: 403,
    otherMailbox: 404,
  },
  'POST /api/mailbox/access-tokens/:tokenId/disable': {
    build: async (w) => ({ path: `/api/mailbox/access-tokens/${(await targetToken(w)).tokenId}/disable` }),
    foreignDomain: 403,
    otherMailbox: 404,
  },
  'DELETE /api/mailbox/access-tokens/:tokenId': {
    build: async (w) => ({ path: `/api/mailbox/access-tokens/${(await targetToken(w)).tokenId}` }),
    foreignDomain: 403,
    otherMailbox: 404,
  },

  // ---- domain governance ----
  // ---- downloads and the DKIM record (mail transport) ----
  'GET /api/messages/:messageId/raw': {
    build: async (w) => ({ path: `/api/messages/${(await seedMessageWithRaw(w.server, w.t.A1)).messageId}/raw` }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'GET /api/messages/:messageId/attachments/:attachmentId': {
    build: async (w) => {
      const m = await seedMessageWithRaw(w.server, w.t.A1);
      return { path: `/api/messages/${m.messageId}/attachments/${m.attachmentId}` };
    },
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'GET /api/messages/:messageId/attachments/:attachmentId/text': {
    build: async (w) => {
      const m = await seedMessageWithRaw(w.server, w.t.A1);
      return { path: `/api/messages/${m.messageId}/attachments/${m.attachmentId}/text` };
    },
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'GET /api/domain/dkim': { build: async () => ({ path: '/api/domain/dkim' }), foreignDomain: 'success' },
  'GET /api/domain/mailboxes': {
    build: async () => ({ path: '/api/domain/mailboxes', query: { limit: '5' } }),
    foreignDomain: 'success',
  },
  'POST /api/domain/mailboxes': {
    build: async (w) => ({ path: '/api/domain/mailboxes', json: { address: `d${fresh()}@${w.t.X.name}` } }),
    foreignDomain: 403,
  },
  'POST /api/domain/mailboxes/:mailboxId/password': {
    // A2, so A1's login password (the login row) stays valid.
    build: async (w) => ({
      path: `/api/domain/mailboxes/${w.t.A2.mailboxId}/password`,
      json: { password: `pw-${fresh()}-long` },
    }),
    foreignDomain: 404,
  },
  'GET /api/domain/mailboxes/:mailboxId/access-tokens': {
    build: async (w) => ({ path: domainTokens(w) }),
    foreignDomain: 404,
  },
  'POST /api/domain/mailboxes/:mailboxId/access-tokens': {
    build: async (w, c) => ({ path: domainTokens(w), json: { tokenName: `t${fresh()}`, scopes: grantable(c) } }),
    foreignDomain: 404,
  },
  'POST /api/domain/mailboxes/:mailboxId/access-tokens/:tokenId/reveal': {
    build: async (w) => ({ path: `${domainTokens(w)}/${(await targetToken(w)).tokenId}/reveal` }),
    foreignDomain: 404,
  },
  'POST /api/domain/mailboxes/:mailboxId/access-tokens/:tokenId/disable': {
    build: async (w) => ({ path: `${domainTokens(w)}/${(await targetToken(w)).tokenId}/disable` }),
    foreignDomain: 404,
  },
  'DELETE /api/domain/mailboxes/:mailboxId/access-tokens/:tokenId': {
    build: async (w) => ({ path: `${domainTokens(w)}/${(await targetToken(w)).tokenId}` }),
    foreignDomain: 404,
  },

  // ---- webhooks (loopback URLs: the matrix server allows private targets and runs no worker) ----
  'POST /api/domain/webhooks': {
    build: async () => ({ path: '/api/domain/webhooks', json: { url: 'http://127.0.0.1:9/hook' } }),
    foreignDomain: 'success',
  },
  'GET /api/domain/webhooks': { build: async () => ({ path: '/api/domain/webhooks' }), foreignDomain: 'success' },
  'DELETE /api/domain/webhooks/:webhookId': {
    build: async (w) => ({ path: `/api/domain/webhooks/${await webhookOf(w, null)}` }),
    foreignDomain: 404,
  },
  'POST /api/mailbox/webhooks': {
    build: async () => ({ path: '/api/mailbox/webhooks', json: { url: 'http://127.0.0.1:9/hook' } }),
    foreignDomain: 403,
    otherMailbox: 'success',
  },
  'GET /api/mailbox/webhooks': {
    build: async () => ({ path: '/api/mailbox/webhooks' }),
    foreignDomain: 403,
    otherMailbox: 'success',
  },
  'DELETE /api/mailbox/webhooks/:webhookId': {
    build: async (w) => ({ path: `/api/mailbox/webhooks/${await webhookOf(w, w.t.A1.mailboxId)}` }),
    foreignDomain: 403,
    otherMailbox: 404,
  },

  // ---- event log ----
  'GET /api/events': {
    build: async (w, c) => ({ path: '/api/events', query: { ...asDomain(c, w), after: '0', limit: '10' } }),
    foreignDomain: 404,
    otherMailbox: 400,
  },

  // ---- outbound policy, approval gate, audit trail ----
  'GET /api/mailbox/policy': {
    build: async (w, c) => ({ path: '/api/mailbox/policy', query: asDomain(c, w) }),
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'GET /api/domain/mailboxes/:mailboxId/policy': {
    build: async (w) => ({ path: `/api/domain/mailboxes/${w.t.A1.mailboxId}/policy` }),
    foreignDomain: 404,
  },
  'PUT /api/domain/mailboxes/:mailboxId/policy': {
    // A2, so A1's sends in other rows keep the default policy.
    build: async (w) => ({ path: `/api/domain/mailboxes/${w.t.A2.mailboxId}/policy`, json: { approval: 'none' } }),
    foreignDomain: 404,
  },
  'POST /api/messages/:messageId/approve': {
    build: async (w) => ({ path: `/api/messages/${(await seedHeldMessage(w.server, w.t.A1)).messageId}/approve` }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'DELETE /api/messages/:messageId/schedule': {
    // A fresh scheduled send of A1 each time: cancelling it (or again) answers 200 to whoever may.
    build: async (w) => {
      const res = await w.server.api(w.t.A1.token).post('/api/messages/send', {
        toAddress: w.t.A2.address,
        bodyText: 'later',
        sendAt: Date.now() + 3_600_000,
      });
      // As for approve and reject: no mailboxAddress (a domain token sees its domain's messages).
      return { path: `/api/messages/${res.body.data.messageId}/schedule` };
    },
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'POST /api/messages/:messageId/reject': {
    build: async (w) => ({ path: `/api/messages/${(await seedHeldMessage(w.server, w.t.A1)).messageId}/reject` }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'POST /api/messages/:messageId/release': {
    // A message that is not held: release answers { released: false } to whoever may release.
    build: async (w) => ({ path: `/api/messages/${(await message(w)).messageId}/release` }),
    foreignDomain: 404,
    otherMailbox: 404,
  },
  'GET /api/mailbox/audit': {
    build: async (w, c) => ({ path: '/api/mailbox/audit', query: { ...asDomain(c, w), limit: '10' } }),
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'GET /api/domain/audit': {
    build: async () => ({ path: '/api/domain/audit', query: { limit: '10' } }),
    foreignDomain: 'success',
  },

  // ---- storage quota ----
  'GET /api/mailbox/storage': {
    build: async (w, c) => ({ path: '/api/mailbox/storage', query: asDomain(c, w) }),
    foreignDomain: 404,
    otherMailbox: 400,
  },
  'GET /api/domain/mailboxes/:mailboxId/storage': {
    build: async (w) => ({ path: `/api/domain/mailboxes/${w.t.A1.mailboxId}/storage` }),
    foreignDomain: 404,
  },
  'PUT /api/domain/mailboxes/:mailboxId/storage': {
    // null: no quota of its own (and none on the domain), so other rows' sends are never refused.
    build: async (w) => ({
      path: `/api/domain/mailboxes/${w.t.A2.mailboxId}/storage`,
      json: { storageQuotaBytes: null },
    }),
    foreignDomain: 404,
  },
  'GET /api/domain/storage': {
    build: async () => ({ path: '/api/domain/storage' }),
    foreignDomain: 'success',
  },
  'PUT /api/domain/storage': {
    build: async () => ({ path: '/api/domain/storage', json: { defaultStorageQuotaBytes: null } }),
    foreignDomain: 'success',
  },

  // ---- approval links (no bearer token: the link's credential is the body) ----
  'POST /api/approval-links/view': {
    build: async (w) => ({
      path: '/api/approval-links/view',
      json: { credential: (await seedApprovalLink(w.server, w.t.A1)).credential },
    }),
    foreignDomain: 'success',
  },
  'POST /api/approval-links/decision': {
    // A fresh held message and link per row: a link decides once.
    build: async (w) => ({
      path: '/api/approval-links/decision',
      json: { credential: (await seedApprovalLink(w.server, w.t.A1)).credential, decision: 'reject' },
    }),
    foreignDomain: 'success',
  },

  // ---- password login (no bearer token) ----
  'POST /api/mailbox/auth/login/password': {
    build: async (w) => ({
      path: '/api/mailbox/auth/login/password',
      json: { mailboxAddress: w.t.A1.address, password: w.password },
    }),
    foreignDomain: 'success',
  },
};

/** Sends a fixture request with an optional Authorization header value. */
export async function send(
  server: TestServer,
  method: string,
  req: RouteRequest,
  authorization?: string,
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (authorization !== undefined) headers.authorization = authorization;
  let body: string | FormData | undefined;
  if (req.form) body = req.form();
  else if (req.json !== undefined) {
    body = JSON.stringify(req.json);
    headers['content-type'] = 'application/json';
  }
  const qs =
    req.query && Object.keys(req.query).length
      ? `?${new URLSearchParams(Object.entries(req.query).filter((e): e is [string, string] => e[1] !== undefined))}`
      : '';
  const res = await fetch(`${server.url}${req.path}${qs}`, { method, headers, body });
  const text = await res.text();
  // A download answers its bytes, not the envelope: a success is checked by status alone.
  if (res.ok && !(res.headers.get('content-type') ?? '').includes('json'))
    return { status: res.status, body: { code: res.status, errMsg: null } };
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
