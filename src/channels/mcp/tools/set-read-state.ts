import { bulkReadStateInputSchema, bulkReadStateResultSchema } from '../../../core/state/messages/message.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_BY_ID } from './fields.js';

/** POST /api/messages/bulk-read-state (one id is simply a list of one). */
export const setReadStateTool = defineTool({
  name: 'set_read_state',
  title: 'Mark messages read or unread',
  description:
    'Mark 1..1000 messages read (isRead true) or unread (false) in one call. Each id succeeds or fails on its own: ' +
    'succeededItems holds { messageId, isRead, readAtTs }, failedItems holds { messageId, code: 404, errMsg } for ids that are ' +
    'unknown, deleted or not visible. Marking an already read message read again keeps its first readAtTs. Duplicate ids count ' +
    'once. Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  input: describeFields(bulkReadStateInputSchema, {
    ids: 'messageId values, 1..1000.',
    isRead: 'true marks read, false marks unread.',
    mailboxAddress: MAILBOX_ADDRESS_BY_ID,
  }),
  output: bulkReadStateResultSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.messages.bulkSetReadState(principal, input),
});
