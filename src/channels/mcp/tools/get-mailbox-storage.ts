import { z } from 'zod';
import { mailboxStorageSchema } from '../../../core/state/quota/storage.schemas.js';
import { defineTool } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_ACTING } from './fields.js';

/** GET /api/mailbox/storage. */
export const getMailboxStorageTool = defineTool({
  name: 'get_mailbox_storage',
  title: 'Get mailbox storage use and quota',
  description:
    "How many bytes one mailbox's messages occupy and its storage quota (quotaBytes null: unlimited), with the uploads " +
    'not yet claimed by a send. Past the quota new mail is refused (QUOTA_EXCEEDED, 413; senders get 552 5.2.2) until ' +
    'messages are deleted. Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  input: z.object({
    mailboxAddress: z.string().trim().max(320).optional().describe(MAILBOX_ADDRESS_ACTING),
  }),
  output: mailboxStorageSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.storage.forMailbox(principal, input.mailboxAddress),
});
