import { defineEntity, p } from '@mikro-orm/core';
import { DomainEntity } from './domain.entity.js';
import { MailboxEntity } from './mailbox.entity.js';

/** A webhook of a domain or of one mailbox (migration 20270110000300, docs/api.md "Webhooks"). */
export const WebhookEntity = defineEntity({
  name: 'Webhook',
  tableName: 'webhook',
  indexes: [
    {
      name: 'webhook_domain_live_idx',
      expression: 'create index "webhook_domain_live_idx" on "webhook" ("domain_id") where "disabled_at" is null',
    },
  ],
  properties: {
    id: p.string().primary().length(40),
    domain: () => p.manyToOne(DomainEntity).mapToPk().deleteRule('cascade'),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().nullable().deleteRule('cascade'),
    url: p.string().length(2048),
    eventTypes: p.array().nullable(),
    mailboxIds: p.array().nullable(),
    secretCipher: p.text(),
    createdByTokenId: p.string().length(40).nullable(),
    createdAt: p.datetime(3),
    disabledAt: p.datetime(3).nullable(),
    disabledReason: p.text().nullable(),
    failingSince: p.datetime(3).nullable(),
    lastSuccessAt: p.datetime(3).nullable(),
    lastFailureAt: p.datetime(3).nullable(),
    lastError: p.text().nullable(),
    /** The circuit (migration 20270404000000): no attempt before this while the endpoint keeps failing. */
    circuitOpenUntil: p.datetime(3).nullable(),
    consecutiveFailures: p.integer().default(0),
  },
});

/**
 * The webhooks' durable outbox: one row per (webhook, mailbox, event sequence), written with the
 * event, delivered in sequence order under a lease.
 */
export const WebhookDeliveryEntity = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_delivery',
  indexes: [
    {
      name: 'webhook_delivery_due_idx',
      expression:
        'create index "webhook_delivery_due_idx" on "webhook_delivery" ("next_attempt_at") where "status" = \'pending\'',
    },
    {
      name: 'webhook_delivery_leased_idx',
      expression:
        'create index "webhook_delivery_leased_idx" on "webhook_delivery" ("webhook_id") where "status" = \'pending\' and "lease_until" is not null',
    },
  ],
  properties: {
    webhook: () => p.manyToOne(WebhookEntity).mapToPk().primary().deleteRule('cascade').updateRule('no action'),
    mailboxId: p.string().primary().length(40),
    seq: p.bigint('number').primary(),
    payload: p.json(),
    status: p.string().length(16),
    attempts: p.integer().default(0),
    nextAttemptAt: p.datetime(3),
    leaseUntil: p.datetime(3).nullable(),
    lockedBy: p.string().length(100).nullable(),
    lastError: p.text().nullable(),
    createdAt: p.datetime(3),
    deliveredAt: p.datetime(3).nullable(),
  },
});
