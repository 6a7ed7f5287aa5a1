import { defineEntity, p } from '@mikro-orm/core';
import { DomainEntity } from './domain.entity.js';

/**
 * A mailbox. `eventSeq` is the last per-mailbox event id handed out; taking the next one
 * row-locks the mailbox, which orders that mailbox's events in commit order.
 * `inboundCount`/`outboundCount` keep totalCount O(1) for any mailbox size.
 */
export const MailboxEntity = defineEntity({
  name: 'Mailbox',
  tableName: 'mailbox',
  indexes: [
    {
      // The expiry sweeper's scan: only the few mailboxes that have an end.
      name: 'mailbox_expires_at_index',
      expression: 'create index "mailbox_expires_at_index" on "mailbox" ("expires_at") where "expires_at" is not null',
    },
  ],
  properties: {
    id: p.string().primary().length(40),
    domain: () => p.manyToOne(DomainEntity).mapToPk().index(),
    address: p.string().length(320).unique(),
    localPart: p.string().length(64),
    displayName: p.string().length(200).default(''),
    notes: p.text().nullable(),
    passwordHash: p.string().length(300).nullable(),
    sendRateLimitPerMinute: p.integer().nullable(),
    /** Outbound policy (docs/api.md); null: the defaults. */
    policy: p.json().nullable(),
    resourceKey: p.string().length(300).nullable().unique(),
    eventSeq: p.bigint('number').default(0),
    inboundCount: p.bigint('number').default(0),
    outboundCount: p.bigint('number').default(0),
    /** Bytes its live messages occupy (docs/api.md, "Storage quota"). */
    storageUsedBytes: p.bigint('number').defaultRaw('0'),
    /** null: the domain's default. */
    storageQuotaBytes: p.bigint('number').nullable(),
    createdAt: p.datetime(3),
    disabledAt: p.datetime(3).nullable(),
    /** An ephemeral mailbox's end: refused at once after it, swept within a minute. */
    expiresAt: p.datetime(3).nullable(),
  },
});

/** An extra address that receives into a mailbox; inactive aliases receive nothing. */
export const MailboxAliasEntity = defineEntity({
  name: 'MailboxAlias',
  tableName: 'mailbox_alias',
  properties: {
    id: p.string().primary().length(40),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().index().deleteRule('cascade'),
    address: p.string().length(320).unique(),
    isActive: p.boolean().default(true),
    createdAt: p.datetime(3),
  },
});

/** An address a mailbox may send as (SMTP AUTH username, MAIL FROM, From header). */
export const SenderIdentityEntity = defineEntity({
  name: 'SenderIdentity',
  tableName: 'sender_identity',
  uniques: [{ properties: ['mailbox', 'address'] }],
  properties: {
    id: p.string().primary().length(40),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().deleteRule('cascade'),
    address: p.string().length(320).index(),
    displayName: p.string().length(200).default(''),
    isActive: p.boolean().default(true),
    createdAt: p.datetime(3),
  },
});

/**
 * An address this mailbox has corresponded with: wrote to in a message that left without approval
 * or was approved, or received mail from. The outbound policy's "new recipient" is one that is not
 * here (docs/api.md, "Outbound policy"); rows stay when the messages are deleted.
 */
export const MailboxContactEntity = defineEntity({
  name: 'MailboxContact',
  tableName: 'mailbox_contact',
  properties: {
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().primary().deleteRule('cascade').updateRule('no action'),
    address: p.string().primary().length(320),
    createdAt: p.datetime(3),
  },
});
