import { z } from 'zod';
import { limitSchema } from '../../../core/base/paging/cursor.js';
import { threadPageSchema, threadStateSchema } from '../../../core/state/messages/thread-state.schemas.js';
import { defineTool } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_ACTING } from './fields.js';

/** GET /api/threads?state=. */
export const listThreadsTool = defineTool({
  name: 'list_threads',
  title: 'List threads by workflow state',
  description:
    'Threads (conversations) of one mailbox, most recent activity first, paged like list_messages, optionally only ' +
    'those in one workflow state: open (something arrived, or nothing was sent yet), awaiting_reply (you sent the last ' +
    'message and no answer came yet; awaitingReplySinceTs says since when), needs_human, or closed. followUpAtTs is ' +
    'when the thread.follow-up-due event fires if the thread is still awaiting_reply then. Sending in a thread sets ' +
    'awaiting_reply, a received message sets open; set_thread_state sets any state. Use state "awaiting_reply" to find ' +
    'conversations that need a follow-up. Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  input: z.object({
    mailboxAddress: z.string().trim().max(320).optional().describe(MAILBOX_ADDRESS_ACTING),
    state: threadStateSchema.optional().describe('Only threads in this state; all threads when absent.'),
    limit: limitSchema.describe('Page size, 1..200. Default 100.'),
    cursor: z.string().min(1).max(500).optional().describe('nextCursor of the previous page, unchanged.'),
  }),
  output: threadPageSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.threads.list(principal, input),
});
