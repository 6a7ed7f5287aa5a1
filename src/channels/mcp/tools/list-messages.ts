import { listMessagesInputSchema, messagePageSchema } from '../../../core/messages/message.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_ACTING } from './fields.js';

/** GET /api/messages. */
export const listMessagesTool = defineTool({
  name: 'list_messages',
  title: 'List messages',
  description:
    'List the messages of one mailbox, newest first, one page at a time. Each item is a summary without bodies ' +
    '(call get_message for the body). Page size is limit, 1..200 (default 100). When nextCursor is not null, call again ' +
    'with cursor set to it for the next (older) page; null means there are no more. totalCount is the number of live ' +
    'messages in the mailbox (for that direction when given). Deleted messages are never listed. Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  input: describeFields(listMessagesInputSchema, {
    mailboxAddress: MAILBOX_ADDRESS_ACTING,
    limit: 'Page size, 1..200. Default 100.',
    cursor:
      'nextCursor of the previous page, unchanged. Omit for the first page. A cursor only works with the same mailbox and direction.',
    direction: '"inbound" (received mail) or "outbound" (mail this mailbox sent). Omit for both.',
  }),
  output: messagePageSchema,
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.messages.list(principal, input),
});
