import { defineEntity, p } from '@mikro-orm/core';
import { leasedWorkColumns } from './leased-work-columns.js';

/**
 * Mail submitted on port 587 and not yet written as a message (docs/api.md, "Queued intake"): the
 * raw message with the mailbox and token it was submitted with and the policy's verdict, written
 * before the 250 and deleted in the transaction that writes the message rows. The id is the
 * message id the 250 named. Workers claim rows like port 25's `inbound_queue`.
 */
export const SubmissionQueueEntity = defineEntity({
  name: 'SubmissionQueue',
  tableName: 'submission_queue',
  indexes: [
    {
      name: 'submission_queue_due_idx',
      expression:
        'create index "submission_queue_due_idx" on "submission_queue" ("run_after") where "status" = \'pending\'',
    },
  ],
  properties: {
    id: p.string().primary().length(40),
    receivedAt: p.datetime(3),
    /** The sending mailbox as read at AUTH (MailboxRef: id, address, domain, display name). */
    mailbox: p.json(),
    tokenId: p.string().length(40),
    mailFrom: p.text(),
    /** The envelope recipients RCPT TO accepted, normalized. */
    recipients: p.json(),
    /** The outbound policy's verdict at end of DATA (PolicyVerdict), written with the message. */
    verdict: p.json(),
    traceContext: p.text().nullable(),
    /** Charged to the mailbox at intake where it has a quota; settled against the stored size. */
    reservedBytes: p.bigint('number'),
    raw: p.blob(),
    ...leasedWorkColumns(),
  },
});
