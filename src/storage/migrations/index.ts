import { Migration20261122000000Initial } from './20261122000000-initial.js';
import { Migration20261201000000SmtpTransport } from './20261201000000-smtp-transport.js';
import { Migration20261220000000BlobReferences } from './20261220000000-blob-references.js';
import { Migration20261223000000OutboundPolicy } from './20261223000000-outbound-policy.js';
import { Migration20270110000000MessageSearch } from './20270110000000-message-search.js';
import { Migration20270110000100MessageExtracted } from './20270110000100-message-extracted.js';
import { Migration20270110000200AttachmentText } from './20270110000200-attachment-text.js';
import { Migration20270110000300Webhooks } from './20270110000300-webhooks.js';
import { Migration20270120000000BlobChunks } from './20270120000000-blob-chunks.js';
import { Migration20270125000000StorageQuota } from './20270125000000-storage-quota.js';
import { Migration20270126000000SearchByMailbox } from './20270126000000-search-by-mailbox.js';
import { Migration20270201000000SearchDeferred } from './20270201000000-search-deferred.js';
import { Migration20270205000000ReplyTextDeferred } from './20270205000000-reply-text-deferred.js';
import { Migration20270210000000MailboxContacts } from './20270210000000-mailbox-contacts.js';
import { Migration20270215000000Lz4Compression } from './20270215000000-lz4-compression.js';
import { Migration20270301000000InboundQueue } from './20270301000000-inbound-queue.js';
import { Migration20270310000000SubmissionQueue } from './20270310000000-submission-queue.js';
import { Migration20270405000000McpEventSubscriptions } from './20270405000000-mcp-event-subscriptions.js';

/** Every migration in order; listed explicitly so the built image needs no file globbing. */
export const migrations = [
  { name: 'Migration20261122000000Initial', class: Migration20261122000000Initial },
  { name: 'Migration20261201000000SmtpTransport', class: Migration20261201000000SmtpTransport },
  { name: 'Migration20261220000000BlobReferences', class: Migration20261220000000BlobReferences },
  { name: 'Migration20261223000000OutboundPolicy', class: Migration20261223000000OutboundPolicy },
  { name: 'Migration20270110000000MessageSearch', class: Migration20270110000000MessageSearch },
  { name: 'Migration20270110000100MessageExtracted', class: Migration20270110000100MessageExtracted },
  { name: 'Migration20270110000200AttachmentText', class: Migration20270110000200AttachmentText },
  { name: 'Migration20270110000300Webhooks', class: Migration20270110000300Webhooks },
  { name: 'Migration20270120000000BlobChunks', class: Migration20270120000000BlobChunks },
  { name: 'Migration20270125000000StorageQuota', class: Migration20270125000000StorageQuota },
  { name: 'Migration20270126000000SearchByMailbox', class: Migration20270126000000SearchByMailbox },
  { name: 'Migration20270201000000SearchDeferred', class: Migration20270201000000SearchDeferred },
  { name: 'Migration20270205000000ReplyTextDeferred', class: Migration20270205000000ReplyTextDeferred },
  { name: 'Migration20270210000000MailboxContacts', class: Migration20270210000000MailboxContacts },
  { name: 'Migration20270215000000Lz4Compression', class: Migration20270215000000Lz4Compression },
  { name: 'Migration20270301000000InboundQueue', class: Migration20270301000000InboundQueue },
  { name: 'Migration20270310000000SubmissionQueue', class: Migration20270310000000SubmissionQueue },
  { name: 'Migration20270405000000McpEventSubscriptions', class: Migration20270405000000McpEventSubscriptions },
];
