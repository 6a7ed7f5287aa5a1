import { threadRefInputSchema, threadViewSchema } from '../../../core/state/messages/message.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { BODY_NOTE, ERRORS_NOTE, MAILBOX_ADDRESS_BY_ID, maxCharsSchema } from './fields.js';
import { boundMessage, fencedText } from '../untrusted-text.js';

/** GET /api/threads/{threadId}. */
export const getThreadTool = defineTool({
  name: 'get_thread',
  title: 'Get a conversation thread',
  description:
    'Read a whole conversation: every live message of the thread, oldest first, each in the same full shape as get_message. ' +
    'A thread is per mailbox (a reply you sent and the mail it answers are in one thread). Deleted messages are left out; ' +
    'a thread whose messages are all deleted is error 404. Needs the MailboxRead scope. ' +
    BODY_NOTE +
    ' ' +
    ERRORS_NOTE,
  input: describeFields(threadRefInputSchema, {
    threadId: 'A threadId from a message summary or send_mail result (opaque, starts with thr_).',
    mailboxAddress: MAILBOX_ADDRESS_BY_ID,
  }).extend({ maxChars: maxCharsSchema }),
  output: threadViewSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: ({ maxChars: _, ...ref }, { principal, services }) => services.messages.getThread(principal, ref),
  text: (data, input) => fencedText(data, data.messages, input.maxChars),
  structured: (data, input) => ({
    ...data,
    subject: input.maxChars === undefined ? data.subject : data.subject.slice(0, input.maxChars),
    messages: data.messages.map((m) => boundMessage(m, input.maxChars)),
  }),
});
