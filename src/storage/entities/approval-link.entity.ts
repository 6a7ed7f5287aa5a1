import { defineEntity, p } from '@mikro-orm/core';
import { leasedWorkColumns } from './leased-work-columns.js';
import { MailboxEntity } from './mailbox.entity.js';
import { MessageEntity } from './message.entity.js';

/**
 * One approver's one-time approval link for one held message (migration 20270425000000,
 * docs/workflow.md, "Approval links"), and the notice that mails it: written with the hold, one
 * row per address of the mailbox's `approverAddresses`; the worker claims it like an outbox job
 * (status `pending` → `sent`, `failed` or `skipped`), mints the credential and mails it. Only the
 * credential's SHA-256 is kept (`secretHash`); `usedAt` is set by the decision it made.
 */
export const ApprovalLinkEntity = defineEntity({
  name: 'ApprovalLink',
  tableName: 'approval_link',
  indexes: [
    {
      name: 'approval_link_due_idx',
      expression: 'create index "approval_link_due_idx" on "approval_link" ("run_after") where "status" = \'pending\'',
    },
  ],
  uniques: [{ name: 'approval_link_secret_uniq', properties: ['secretHash'] }],
  properties: {
    message: () => p.manyToOne(MessageEntity).mapToPk().primary().deleteRule('cascade').updateRule('no action'),
    approverAddress: p.string().primary().length(320),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().index().deleteRule('cascade'),
    secretHash: p.string().length(64).nullable(),
    /** The hold's own expiry (its start, holdStartedAt, + APPROVAL_TTL), set when the link is minted. */
    expiresAt: p.datetime(3).nullable(),
    usedAt: p.datetime(3).nullable(),
    ...leasedWorkColumns(),
    sentAt: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
  },
});
