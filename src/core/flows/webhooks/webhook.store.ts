import { ms, sql, type Database } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';
import type { WebhookView } from './webhook.schemas.js';
import { AppError } from '../../base/errors.js';

export type WebhookRow = Row<
  'webhook',
  | 'id'
  | 'domain_id'
  | 'mailbox_id'
  | 'url'
  | 'event_types'
  | 'mailbox_ids'
  | 'created_at'
  | 'disabled_at'
  | 'disabled_reason'
  | 'failing_since'
  | 'last_success_at'
  | 'last_failure_at'
  | 'last_error'
> & {
  /** The addresses of mailbox_ids, in the same order (a subquery). */
  mailbox_addresses: string[] | null;
};

/** Whose webhooks a call sees: a domain token its whole domain, a mailbox token its own mailbox's. */
export type WebhookOwner =
  { kind: 'domain'; domainId: string } | { kind: 'mailbox'; domainId: string; mailboxId: string };

// An MCP events subscription's webhook belongs to the subscription (events/unsubscribe), not to these routes.
const notSubscription = sql`not exists (select 1 from mcp_event_subscription s where s.webhook_id = w.id)`;
const owned = (o: WebhookOwner) =>
  o.kind === 'domain'
    ? sql`w.domain_id = ${o.domainId} and ${notSubscription}`
    : sql`w.domain_id = ${o.domainId} and w.mailbox_id = ${o.mailboxId} and ${notSubscription}`;

const COLUMNS = sql`w.id, w.domain_id, w.mailbox_id, w.url, w.event_types, w.mailbox_ids, w.created_at, w.disabled_at,
  w.disabled_reason, w.failing_since, w.last_success_at, w.last_failure_at, w.last_error,
  (select array_agg(mb.address order by mb.address) from mailbox mb where mb.id = any(w.mailbox_ids)) as mailbox_addresses`;

/** WEBHOOK_MAX_PER_MAILBOX and WEBHOOK_MAX_PER_DOMAIN: live (not disabled) registrations at most. */
export interface WebhookCaps {
  perMailbox: number;
  perDomain: number;
}

/**
 * Inserts a webhook unless its mailbox or its domain already has its cap of live ones
 * (WEBHOOK_LIMIT_REACHED). The domain row is locked first, so concurrent registrations are counted
 * one after the other and never pass the cap together.
 */
export async function insertWebhook(
  db: Database,
  caps: WebhookCaps,
  w: {
    id: string;
    domainId: string;
    mailboxId: string | null;
    url: string;
    eventTypes: string[] | null;
    mailboxIds: string[] | null;
    secretCipher: string;
    tokenId: string;
    at: Date;
  },
): Promise<void> {
  await db.tx(async (trx) => {
    await sql`select id from domain where id = ${w.domainId} for update`.execute(trx);
    const counts = (
      await sql<{ in_domain: string | number; in_mailbox: string | number }>`select count(*) as in_domain,
          count(*) filter (where mailbox_id = ${w.mailboxId}) as in_mailbox
        from webhook where domain_id = ${w.domainId} and disabled_at is null`.execute(trx)
    ).rows[0]!;
    if (Number(counts.in_domain) >= caps.perDomain)
      throw new AppError(
        'WEBHOOK_LIMIT_REACHED',
        `This domain already has ${caps.perDomain} webhooks (WEBHOOK_MAX_PER_DOMAIN).`,
      );
    if (w.mailboxId !== null && Number(counts.in_mailbox) >= caps.perMailbox)
      throw new AppError(
        'WEBHOOK_LIMIT_REACHED',
        `This mailbox already has ${caps.perMailbox} webhooks (WEBHOOK_MAX_PER_MAILBOX).`,
      );
    await sql`insert into webhook (id, domain_id, mailbox_id, url, event_types, mailbox_ids, secret_cipher,
        created_by_token_id, created_at)
      values (${w.id}, ${w.domainId}, ${w.mailboxId}, ${w.url}, ${w.eventTypes}::text[], ${w.mailboxIds}::text[],
        ${w.secretCipher}, ${w.tokenId}, ${w.at})`.execute(trx);
  });
}

export async function listWebhooks(db: Database, owner: WebhookOwner): Promise<WebhookRow[]> {
  return db.rows(sql<WebhookRow>`select ${COLUMNS} from webhook w where ${owned(owner)} order by w.created_at, w.id`);
}

export async function findWebhook(db: Database, owner: WebhookOwner, id: string): Promise<WebhookRow | undefined> {
  return db.one(sql<WebhookRow>`select ${COLUMNS} from webhook w where w.id = ${id} and ${owned(owner)}`);
}

/** Deleting a webhook deletes its outbox rows (cascade): nothing more is sent. */
export async function deleteWebhook(db: Database, owner: WebhookOwner, id: string): Promise<boolean> {
  const rows = await db.rows(
    sql<{ id: string }>`delete from webhook w where w.id = ${id} and ${owned(owner)} returning w.id`,
  );
  return rows.length > 0;
}

/** Ids of the enabled mailboxes of a domain with these addresses (unknown ones are simply missing). */
export async function mailboxIdsOf(db: Database, domainId: string, addresses: readonly string[]) {
  return db.rows(sql<{ id: string; address: string }>`select id, address from mailbox
    where domain_id = ${domainId} and address = any(${addresses}::text[]) and disabled_at is null`);
}

export function toWebhookView(r: WebhookRow): WebhookView {
  return {
    webhookId: r.id,
    url: r.url,
    eventTypes: r.event_types,
    mailboxAddresses: r.mailbox_ids === null ? null : (r.mailbox_addresses ?? []),
    scope: r.mailbox_id === null ? 'domain' : 'mailbox',
    createdAtTs: ms(r.created_at)!,
    disabledAtTs: ms(r.disabled_at),
    disabledReason: r.disabled_reason,
    failingSinceTs: ms(r.failing_since),
    lastSuccessAtTs: ms(r.last_success_at),
    lastFailureAtTs: ms(r.last_failure_at),
    lastError: r.last_error,
  };
}
