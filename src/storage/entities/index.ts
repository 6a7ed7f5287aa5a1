export { DomainEntity } from './domain.entity.js';
export { MailboxEntity, MailboxAliasEntity, SenderIdentityEntity, MailboxContactEntity } from './mailbox.entity.js';
export { AccessTokenEntity } from './access-token.entity.js';
export {
  ThreadEntity,
  MessageEntity,
  MessageRecipientEntity,
  AttachmentEntity,
  AttachmentTextEntity,
} from './message.entity.js';
export { OutboxJobEntity, MailboxEventEntity, BlobEntity, BlobChunkEntity } from './outbox.entity.js';
export { DkimKeyEntity } from './dkim-key.entity.js';
export { AuditEntryEntity } from './audit-entry.entity.js';
export { WebhookEntity, WebhookDeliveryEntity } from './webhook.entity.js';
export { InboundQueueEntity } from './inbound-queue.entity.js';
export { SubmissionQueueEntity } from './submission-queue.entity.js';
export { McpEventSubscriptionEntity } from './mcp-event-subscription.entity.js';
export { ApprovalLinkEntity } from './approval-link.entity.js';
export { DraftEntity } from './draft.entity.js';

import { DomainEntity } from './domain.entity.js';
import { MailboxEntity, MailboxAliasEntity, SenderIdentityEntity, MailboxContactEntity } from './mailbox.entity.js';
import { AccessTokenEntity } from './access-token.entity.js';
import {
  ThreadEntity,
  MessageEntity,
  MessageRecipientEntity,
  AttachmentEntity,
  AttachmentTextEntity,
} from './message.entity.js';
import { OutboxJobEntity, MailboxEventEntity, BlobEntity, BlobChunkEntity } from './outbox.entity.js';
import { DkimKeyEntity } from './dkim-key.entity.js';
import { AuditEntryEntity } from './audit-entry.entity.js';
import { WebhookEntity, WebhookDeliveryEntity } from './webhook.entity.js';
import { InboundQueueEntity } from './inbound-queue.entity.js';
import { SubmissionQueueEntity } from './submission-queue.entity.js';
import { McpEventSubscriptionEntity } from './mcp-event-subscription.entity.js';
import { ApprovalLinkEntity } from './approval-link.entity.js';
import { DraftEntity } from './draft.entity.js';

export const allEntities = [
  DomainEntity,
  MailboxEntity,
  MailboxAliasEntity,
  SenderIdentityEntity,
  MailboxContactEntity,
  AccessTokenEntity,
  ThreadEntity,
  MessageEntity,
  MessageRecipientEntity,
  AttachmentEntity,
  AttachmentTextEntity,
  OutboxJobEntity,
  MailboxEventEntity,
  BlobEntity,
  BlobChunkEntity,
  DkimKeyEntity,
  AuditEntryEntity,
  WebhookEntity,
  WebhookDeliveryEntity,
  InboundQueueEntity,
  SubmissionQueueEntity,
  McpEventSubscriptionEntity,
  ApprovalLinkEntity,
  DraftEntity,
];
