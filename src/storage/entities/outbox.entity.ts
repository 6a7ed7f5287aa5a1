import { defineEntity, p } from '@mikro-orm/core';
import { leasedWorkColumns } from './leased-work-columns.js';
import { MailboxEntity } from './mailbox.entity.js';
import { MessageEntity } from './message.entity.js';

/**
 * One delivery job per outbound message, written in the same transaction as the message.
 * Workers claim due jobs with FOR UPDATE SKIP LOCKED and hold a lease; an expired lease
 * makes the job claimable again, so a crashed worker's job is retried.
 */
export const OutboxJobEntity = defineEntity({
  name: 'OutboxJob',
  tableName: 'outbox_job',
  indexes: [
    {
      name: 'outbox_job_due_idx',
      expression: 'create index "outbox_job_due_idx" on "outbox_job" ("run_after") where "status" = \'pending\'',
    },
  ],
  properties: {
    id: p.string().primary().length(40),
    message: () => p.manyToOne(MessageEntity).mapToPk().unique().deleteRule('cascade'),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().index().deleteRule('cascade'),
    ...leasedWorkColumns(),
    traceContext: p.string().length(200).nullable(),
    /** A scheduled send: who scheduled it, admitted by the worker when due (null: admitted at send). */
    admitTokenId: p.string().length(40).nullable(),
    admitChannel: p.string().length(10).nullable(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
});

/** The retained event log: appended in the change's transaction, served by the real-time hub. */
export const MailboxEventEntity = defineEntity({
  name: 'MailboxEvent',
  tableName: 'mailbox_event',
  indexes: [{ name: 'mailbox_event_occurred_idx', properties: ['occurredAt'] }],
  properties: {
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().primary().deleteRule('cascade'),
    seq: p.bigint('number').primary(),
    type: p.string().length(40),
    occurredAt: p.datetime(3),
    payload: p.json(),
  },
});

/** Blob bytes for the PostgreSQL blob store (several replicas without a shared volume). */
export const BlobEntity = defineEntity({
  name: 'Blob',
  tableName: 'blob',
  properties: {
    key: p.string().primary().length(200),
    /** Blobs written before blob_chunk (migration 20270120000000) keep their bytes here; newer rows leave it null. */
    data: p.blob().nullable(),
    sizeBytes: p.bigint('number'),
    createdAt: p.datetime(3),
  },
});

/** One chunk of a blob's bytes (migration 20270120000000): written and committed one at a time. */
export const BlobChunkEntity = defineEntity({
  name: 'BlobChunk',
  tableName: 'blob_chunk',
  properties: {
    key: p.string().primary().length(200),
    seq: p.integer().primary(),
    data: p.blob(),
    createdAt: p.datetime(3).defaultRaw('now()'),
  },
});
