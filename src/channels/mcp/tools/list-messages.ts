import { z } from 'zod';
import { listMessagesInputSchema, messagePageSchema } from '../../../core/state/messages/message.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_ACTING } from './fields.js';

const listOutputSchema = messagePageSchema
  .extend({
    changeMark: z.string(),
    unchanged: z.boolean(),
  })
  .partial({ items: true, nextCursor: true, totalCount: true });

/** GET /api/messages (with its ETag as changeMark / ifChangedSince). */
export const listMessagesTool = defineTool({
  name: 'list_messages',
  title: 'List messages',
  description:
    'List the messages of one mailbox, newest first, one page at a time. Each item is a summary without bodies ' +
    '(call get_message for the body). Page size is limit, 1..200 (default 100). When nextCursor is not null, call again ' +
    'with cursor set to it for the next (older) page; null means there are no more. totalCount is the number of live ' +
    'messages in the mailbox (for that direction when given). Deleted messages are never listed. Every answer carries ' +
    'changeMark; polling with ifChangedSince set to it (and the same other arguments) answers { unchanged: true, ' +
    'changeMark } without items when nothing in the mailbox changed, which is cheap. Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  // No `screening`: held mail is never an agent's read (docs/screening.md).
  input: describeFields(listMessagesInputSchema.omit({ screening: true }), {
    mailboxAddress: MAILBOX_ADDRESS_ACTING,
    limit: 'Page size, 1..200. Default 100.',
    cursor:
      'nextCursor of the previous page, unchanged. Omit for the first page. A cursor only works with the same mailbox and direction.',
    direction: '"inbound" (received mail) or "outbound" (mail this mailbox sent). Omit for both.',
    status:
      '"scheduled": only the sends still waiting for their sendAt (each item carries sendAtTs; cancel_scheduled_send cancels one). Omit for all.',
  }).extend({
    ifChangedSince: z
      .string()
      .max(100)
      .optional()
      .describe('Optional. changeMark of an earlier list_messages call with the same arguments: unchanged → no items.'),
  }),
  output: listOutputSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: async ({ ifChangedSince, ...input }, { principal, services }) => {
    // Every argument but the mark itself (the parsed input keeps the schema's key order), so a
    // list argument added later can never share a mark with a call that differs only in it.
    const request = `list_messages ${JSON.stringify(input)}`;
    const { value, mark } = await services.messages.listUnlessUnchanged(
      principal,
      input,
      request,
      ifChangedSince === undefined ? undefined : (current) => current === ifChangedSince,
    );
    if (!value) return { changeMark: mark, unchanged: true };
    return { ...value, changeMark: mark, unchanged: false };
  },
});
