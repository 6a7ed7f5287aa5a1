import { z } from 'zod';
import { limitSchema } from '../../base/paging/cursor.js';

/** A thread's workflow state (docs/workflow.md, "Thread state"). */
export const THREAD_STATES = ['open', 'awaiting_reply', 'needs_human', 'closed'] as const;
export const threadStateSchema = z.enum(THREAD_STATES);
export type ThreadState = z.infer<typeof threadStateSchema>;

const mailboxAddress = z.string().trim().max(320).optional();
const ts = z.number().int();

export const listThreadsInputSchema = z.object({
  mailboxAddress,
  state: threadStateSchema.optional(),
  limit: limitSchema,
  cursor: z.string().min(1).max(500).optional(),
});
export type ListThreadsInput = z.infer<typeof listThreadsInputSchema>;

/** PUT /api/threads/{threadId}/state body; `followUpAtTs: null` clears the follow-up, absent keeps it. */
export const setThreadStateBodySchema = z
  .object({
    state: threadStateSchema,
    followUpAtTs: ts.min(0).max(8.64e15).nullable().optional(),
    mailboxAddress,
  })
  .strict();
export type SetThreadStateBody = z.infer<typeof setThreadStateBodySchema>;

export const threadSummarySchema = z.object({
  threadId: z.string(),
  mailboxId: z.string(),
  mailboxAddress: z.string(),
  subject: z.string(),
  state: threadStateSchema,
  /** Since the first unanswered send; null unless awaiting_reply. */
  awaitingReplySinceTs: ts.nullable(),
  /** When thread.follow-up-due fires if the thread is still awaiting_reply; null when none. */
  followUpAtTs: ts.nullable(),
  /** When that event was emitted; null until then (and again after a new followUpAtTs). */
  followUpNotifiedAtTs: ts.nullable(),
  lastMessageAtTs: ts,
  createdAtTs: ts,
});
export type ThreadSummary = z.infer<typeof threadSummarySchema>;

export const threadPageSchema = z.object({
  items: z.array(threadSummarySchema),
  nextCursor: z.string().nullable(),
  totalCount: z.number().int(),
});
