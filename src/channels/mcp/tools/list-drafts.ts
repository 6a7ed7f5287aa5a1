import { draftPageSchema, listDraftsInputSchema } from '../../../core/state/drafts/draft.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_ACTING } from './fields.js';
import { DRAFT_NOTE } from './create-draft.js';

/** GET /api/drafts. */
export const listDraftsTool = defineTool({
  name: 'list_drafts',
  title: 'List drafts',
  description:
    'The drafts of one mailbox, newest first, paged like list_messages: recipients, subject, the first words of the ' +
    'text body (snippet), attachments, reply parent and schedule, without the bodies (get_draft reads one in full). ' +
    'Use it to find a draft you or a person prepared before changing or sending it. ' +
    DRAFT_NOTE +
    'Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  input: describeFields(listDraftsInputSchema, {
    mailboxAddress: MAILBOX_ADDRESS_ACTING,
    limit: 'Page size, 1..200. Default 100.',
    cursor: 'nextCursor of the previous page, unchanged.',
  }),
  output: draftPageSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.drafts.list(principal, input),
});
