import type { Screening } from '../../state/screening/screening.schemas.js';
import { trustOfVerdicts } from '../../state/messages/message-trust.js';

/** What a `message.received` event says of a message: at ingest, or when held mail is released. */
export interface ReceivedEventFields {
  messageId: string;
  threadId: string;
  subject: string;
  fromAddress: string;
  fromDisplayName: string;
  toAddresses: string[];
  ccAddresses: string[];
  attachmentCount: number;
  inReplyToMessageId: string | null;
  receivedAt: Date;
  /** SPF/DKIM/DMARC verdicts; stored for port-25 mail only. */
  authResults: unknown;
  screening: Screening;
}

/** The `message.received` payload, one shape for ingest and release. */
export function receivedEventData(f: ReceivedEventFields): Record<string, unknown> {
  return {
    messageId: f.messageId,
    threadId: f.threadId,
    direction: 'inbound',
    subject: f.subject,
    fromAddress: f.fromAddress,
    fromDisplayName: f.fromDisplayName,
    toAddresses: f.toAddresses,
    ccAddresses: f.ccAddresses,
    attachmentCount: f.attachmentCount,
    inReplyToMessageId: f.inReplyToMessageId,
    receivedAtTs: f.receivedAt.getTime(),
    // docs/contract.md, "Sender integrity and inbound trust": the one rule (message-trust.ts).
    ...trustOfVerdicts(f.authResults as Record<string, unknown> | null),
    screening: f.screening,
  };
}
