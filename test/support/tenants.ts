import { sql } from '../../src/storage/database.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';
import { hashPassword } from '../../src/core/access/password.js';
import type { Clock } from '../../src/core/base/time.js';
import { DOMAIN_TOKEN_SCOPES, MAILBOX_TOKEN_SCOPES, type Scope, type TokenKind } from '../../src/core/access/scopes.js';
import type { TestServer } from './harness.js';

// Seeding helpers for the security tests: tokens minted straight through the core (any scope
// set, expiry or state) and messages inserted with SQL, so these tests do not depend on the
// message and send routes they check.

/** A clock the test moves by hand (reveal window, expiry) instead of sleeping. */
export class ManualClock implements Clock {
  constructor(private t = Date.now()) {}
  now(): Date {
    return new Date(this.t);
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

export interface MailboxFixture {
  mailboxId: string;
  address: string;
  token: string;
  tokenId: string;
  domainId: string;
}
export interface DomainFixture {
  domainId: string;
  name: string;
  token: string;
  tokenId: string;
}

export interface MintOptions {
  kind: TokenKind;
  domainId: string;
  mailboxId?: string | null;
  scopes?: readonly Scope[];
  /** Default one day ahead of the server clock; `null` never expires. */
  expiresAt?: Date | null;
  disabled?: boolean;
  name?: string;
  /** The token that minted this one (a child shares its parent's self-approval refusal). */
  parentTokenId?: string | null;
}

/** Mints a token of any shape through TokenMinter.mint; returns plaintext and id. */
export async function mintToken(server: TestServer, o: MintOptions): Promise<{ token: string; tokenId: string }> {
  const services = server.runtime.services;
  const now = services.clock.now().getTime();
  const created = await services.db.tx((trx) =>
    services.tokenMinter.mint(trx, {
      kind: o.kind,
      domainId: o.domainId,
      mailboxId: o.kind === 'mailbox' ? o.mailboxId! : null,
      name: o.name ?? 'fixture',
      scopes: o.scopes ?? (o.kind === 'mailbox' ? MAILBOX_TOKEN_SCOPES : DOMAIN_TOKEN_SCOPES),
      expiresAt: o.expiresAt === undefined ? new Date(now + 86_400_000) : o.expiresAt,
      createdSource: 'resource',
      parentTokenId: o.parentTokenId ?? null,
    }),
  );
  if (o.disabled)
    await services.db.rows(
      sql`update access_token set disabled_at = ${new Date(now)}, plaintext_cipher = null where id = ${created.tokenId}`,
    );
  return { token: created.accessToken, tokenId: created.tokenId };
}

export async function setMailboxPassword(server: TestServer, mailboxId: string, password: string): Promise<void> {
  await server.runtime.services.db.rows(
    sql`update mailbox set password_hash = ${await hashPassword(password)} where id = ${mailboxId}`,
  );
}

export interface SeededMessage {
  messageId: string;
  threadId: string;
}

/**
 * Inserts an inbound message (and its thread unless one is given) the way inbound delivery
 * stores it, keeping mailbox.inbound_count in step because totalCount reads it.
 */
export async function seedMessage(
  server: TestServer,
  mailbox: { mailboxId: string; address: string },
  o: { subject?: string; threadId?: string } = {},
): Promise<SeededMessage> {
  const services = server.runtime.services;
  const now = services.clock.now();
  const messageId = newId(ID_PREFIX.message);
  const threadId = o.threadId ?? newId(ID_PREFIX.thread);
  const subject = o.subject ?? 'Seeded';
  await services.db.tx(async (trx) => {
    if (!o.threadId) {
      await sql`insert into thread (id, mailbox_id, subject, created_at, last_message_at)
        values (${threadId}, ${mailbox.mailboxId}, ${subject}, ${now}, ${now})`.execute(trx);
    }
    await sql`insert into message (id, mailbox_id, thread_id, direction, subject, from_address, from_display_name, to_addresses,
        cc_addresses, bcc_addresses, mailbox_address, attachment_count, body_text, body_html, body_format, internet_message_id,
        references_header, is_read, created_at, received_at)
      values (${messageId}, ${mailbox.mailboxId}, ${threadId}, 'inbound', ${subject}, 'sender@remote.example', 'Sender',
        ${[mailbox.address]}::text[], ${[]}::text[], ${[]}::text[], ${mailbox.address}, 0, 'Hello', null, 'text',
        ${`<${messageId}@remote.example>`}, ${[]}::text[], false, ${now}, ${now})`.execute(trx);
    await sql`update mailbox set inbound_count = inbound_count + 1 where id = ${mailbox.mailboxId}`.execute(trx);
  });
  return { messageId, threadId };
}

/**
 * An outbound message of `mailbox` held by the approval gate, written by the same store function
 * a send uses (no outbox job, approval_status pending), for the approve/reject rows.
 */
export async function seedHeldMessage(
  server: TestServer,
  mailbox: { mailboxId: string; address: string; domainId: string },
  sentByTokenId: string | null = null,
): Promise<SeededMessage> {
  const { writeOutbound } = await import('../../src/core/flows/sending/outbound.store.js');
  const services = server.runtime.services;
  const ref = { id: mailbox.mailboxId, address: mailbox.address, domainId: mailbox.domainId, displayName: '' };
  const written = await services.db.tx((trx) =>
    writeOutbound(
      trx,
      { ...ref, sendRateLimitPerMinute: null },
      {
        to: ['someone@remote.example'],
        cc: [],
        bcc: [],
        subject: 'Held',
        bodyText: 'Hi',
        bodyHtml: null,
        attachmentIds: [],
        parent: null,
      },
      {
        at: services.clock.now(),
        sentByTokenId,
        idempotencyKey: null,
        requestHash: null,
        traceContext: null,
        held: true,
      },
    ),
  );
  return { messageId: written.accepted.messageId, threadId: written.accepted.threadId };
}

export interface Tenants {
  /** Domain X with mailboxes A1 and A2. */
  X: DomainFixture;
  A1: MailboxFixture;
  A2: MailboxFixture;
  /** Domain Y with mailbox B1. */
  Y: DomainFixture;
  B1: MailboxFixture;
}

/** Two tenants, the shape every isolation check runs over (STYLE: parameterise over tenants). */
export async function createTenants(server: TestServer): Promise<Tenants> {
  const X = await server.createDomain();
  const Y = await server.createDomain();
  const mailbox = async (d: DomainFixture, local: string): Promise<MailboxFixture> => ({
    ...(await server.createMailbox(d.token, `${local}@${d.name}`, local.toUpperCase())),
    domainId: d.domainId,
  });
  return { X, Y, A1: await mailbox(X, 'a1'), A2: await mailbox(X, 'a2'), B1: await mailbox(Y, 'b1') };
}
