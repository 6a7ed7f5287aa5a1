import { defineEntity, p } from '@mikro-orm/core';
import { leasedWorkColumns } from './leased-work-columns.js';

/**
 * Mail accepted on port 25 and not yet delivered into its mailboxes (docs/api.md, "Queued
 * intake"): the raw message as received with its envelope, written before the 250 and deleted in
 * the transaction that stores the message rows. Workers claim rows with FOR UPDATE SKIP LOCKED
 * under a lease like outbox jobs; `failed` rows stay for an operator.
 */
export const InboundQueueEntity = defineEntity({
  name: 'InboundQueue',
  tableName: 'inbound_queue',
  indexes: [
    {
      name: 'inbound_queue_due_idx',
      expression: 'create index "inbound_queue_due_idx" on "inbound_queue" ("run_after") where "status" = \'pending\'',
    },
  ],
  properties: {
    id: p.string().primary().length(40),
    receivedAt: p.datetime(3),
    mailFrom: p.text(),
    /** `[{ address, mailboxId }]`, the recipients RCPT TO accepted. */
    recipients: p.json(),
    clientAddress: p.string().length(64),
    helo: p.text(),
    tls: p.boolean(),
    /** Charged to each recipient mailbox at intake; settled against the stored size on delivery. */
    reservedBytes: p.bigint('number'),
    raw: p.blob(),
    ...leasedWorkColumns(),
  },
});
