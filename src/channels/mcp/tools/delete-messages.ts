import { bulkDeleteInputSchema, bulkDeleteResultSchema } from '../../../core/state/messages/message.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_BY_ID } from './fields.js';

/** POST /api/messages/bulk-delete (one id is simply a list of one). */
export const deleteMessagesTool = defineTool({
  name: 'delete_messages',
  title: 'Delete messages',
  description:
    'Soft-delete 1..1000 messages. A deleted message disappears from list_messages, get_thread and get_message (404) and ' +
    'cannot be restored through this service by anyone: treat it as permanent. Deleting does not recall mail already sent. ' +
    'Each id succeeds or fails on its own: succeededItems holds { messageId, deletedAtTs, alreadyDeleted } (alreadyDeleted ' +
    'true when it was deleted before), failedItems holds { messageId, code: 404, errMsg }. Needs the MailboxDelete scope. ' +
    ERRORS_NOTE,
  input: describeFields(bulkDeleteInputSchema, {
    ids: 'messageId values, 1..1000.',
    mailboxAddress: MAILBOX_ADDRESS_BY_ID,
  }),
  output: bulkDeleteResultSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.messages.bulkDelete(principal, input),
});
