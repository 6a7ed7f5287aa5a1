import { defineEntity, p } from '@mikro-orm/core';
import { MailboxEntity } from './mailbox.entity.js';
import { WebhookEntity } from './webhook.entity.js';

/** A webhook subscription of the MCP events extension (migration 20270405000000, docs/mcp.md). */
export const McpEventSubscriptionEntity = defineEntity({
  name: 'McpEventSubscription',
  tableName: 'mcp_event_subscription',
  indexes: [{ name: 'mcp_event_subscription_refresh_idx', properties: ['refreshBefore'] }],
  uniques: [
    { name: 'mcp_event_subscription_key_uniq', properties: ['subscriptionKey'] },
    { name: 'mcp_event_subscription_webhook_uniq', properties: ['webhook'] },
  ],
  properties: {
    id: p.string().primary().length(40),
    webhook: () => p.manyToOne(WebhookEntity).mapToPk().deleteRule('cascade'),
    tokenId: p.string().length(40),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().deleteRule('cascade'),
    eventType: p.string().length(64),
    subscriptionKey: p.string().length(64),
    startSeq: p.bigint('number'),
    refreshBefore: p.datetime(3),
    createdAt: p.datetime(3),
  },
});
