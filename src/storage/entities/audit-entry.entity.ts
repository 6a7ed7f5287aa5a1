import { defineEntity, p } from '@mikro-orm/core';
import { MailboxEntity } from './mailbox.entity.js';

/**
 * One send attempt or approval decision (docs/api.md, "Audit trail"). Never a token, never a
 * message body: who (token id), where (channel), what (decision, rule, reason), how many.
 */
export const AuditEntryEntity = defineEntity({
  name: 'AuditEntry',
  tableName: 'audit_entry',
  indexes: [
    {
      name: 'audit_entry_mailbox_idx',
      expression:
        'create index "audit_entry_mailbox_idx" on "audit_entry" ("mailbox_id", "created_at" desc, "id" desc)',
    },
    {
      name: 'audit_entry_domain_idx',
      expression: 'create index "audit_entry_domain_idx" on "audit_entry" ("domain_id", "created_at" desc, "id" desc)',
    },
    { name: 'audit_entry_created_idx', properties: ['createdAt'] },
  ],
  properties: {
    id: p.string().primary().length(40),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().deleteRule('cascade'),
    domainId: p.string().length(40),
    tokenId: p.string().length(40).nullable(),
    /** The person who decided through an approval link (their address); null for token and worker entries. */
    actorAddress: p.string().length(320).nullable(),
    channel: p.string().length(16),
    decision: p.string().length(16),
    rule: p.string().length(40).nullable(),
    reason: p.text().nullable(),
    recipientCount: p.integer().default(0),
    newRecipientCount: p.integer().default(0),
    messageId: p.string().length(40).nullable(),
    createdAt: p.datetime(3),
  },
});
