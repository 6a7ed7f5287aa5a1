import { z } from 'zod';
import { threadStateSchema, threadSummarySchema } from '../../../core/state/messages/thread-state.schemas.js';
import { defineTool } from '../tool.js';
import { ERRORS_NOTE } from './fields.js';

/** PUT /api/threads/{threadId}/state. */
export const setThreadStateTool = defineTool({
  name: 'set_thread_state',
  title: "Set a thread's workflow state",
  description:
    "Set a thread's workflow state: open, awaiting_reply, needs_human (hand it to a person) or closed (done). " +
    'followUpAtTs (Unix ms) schedules a reminder: when it passes and the thread is still awaiting_reply, the event ' +
    'thread.follow-up-due is emitted exactly once (real-time, webhooks, MCP events); a reply arriving first sets the ' +
    'thread open and cancels the reminder. Give followUpAtTs null to clear it; leave it out to keep it. A new ' +
    'followUpAtTs re-arms the event. Sending in a thread sets awaiting_reply and a received message sets open by ' +
    'themselves. Needs the MailboxSend scope; with a domain token mailboxAddress must be the mailbox holding the ' +
    'thread (else error 400). ' +
    ERRORS_NOTE,
  input: z.object({
    threadId: z.string().trim().min(1).max(200).describe('threadId from a message or from list_threads.'),
    state: threadStateSchema.describe('The new state.'),
    followUpAtTs: z
      .number()
      .int()
      .min(0)
      .max(8.64e15)
      .nullable()
      .optional()
      .describe('When to emit thread.follow-up-due if still awaiting_reply (Unix ms); null clears; absent keeps.'),
    mailboxAddress: z
      .string()
      .trim()
      .max(320)
      .optional()
      .describe('Domain tokens: the mailbox that holds the thread. Mailbox tokens may leave it out.'),
  }),
  output: threadSummarySchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: ({ threadId, ...input }, { principal, services }) => services.threads.setState(principal, threadId, input),
});
