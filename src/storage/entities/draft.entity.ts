import { defineEntity, p } from '@mikro-orm/core';
import { MailboxEntity } from './mailbox.entity.js';

/**
 * A draft (migration 20270420000000, docs/workflow.md "Drafts"): what a send takes, kept until
 * it is sent or deleted, and possibly incomplete. The uploads it holds name it
 * (`attachment.draft_id`), so the sweeper leaves them while it exists. Paged newest first.
 */
export const DraftEntity = defineEntity({
  name: 'Draft',
  tableName: 'draft',
  indexes: [
    {
      name: 'draft_list_idx',
      expression: 'create index "draft_list_idx" on "draft" ("mailbox_id", "created_at" desc, "id" desc)',
    },
  ],
  properties: {
    id: p.string().primary().length(40),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().deleteRule('cascade'),
    toAddresses: p.array().defaultRaw("'{}'"),
    ccAddresses: p.array().defaultRaw("'{}'"),
    bccAddresses: p.array().defaultRaw("'{}'"),
    /** null: not given (a reply then takes the parent's, with "Re: "). */
    subject: p.text().nullable(),
    bodyText: p.text().nullable(),
    bodyHtml: p.text().nullable(),
    /** A reply draft's parent message (checked again when it is sent: it may have been deleted since). */
    parentMessageId: p.string().length(40).nullable(),
    replyAll: p.boolean().default(false),
    sendAt: p.datetime(3).nullable(),
    cancelOnReply: p.boolean().default(false),
    /** The token that created it (shown to the person who sends it). */
    createdByTokenId: p.string().length(40).nullable(),
    /** Raised by every change: a send takes the draft only as it read it (else 409 DRAFT_CHANGED). */
    revision: p.integer().default(1),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
});
