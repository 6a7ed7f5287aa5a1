import { draftDeletedSchema, draftRefInputSchema } from '../../../core/state/drafts/draft.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE } from './fields.js';
import { DRAFT_ID } from './get-draft.js';

/** DELETE /api/drafts/{draftId}. */
export const deleteDraftTool = defineTool({
  name: 'delete_draft',
  title: 'Delete a draft',
  description:
    'Discard a draft that will not be sent. It is removed for good (emits draft.deleted); the uploads it held are ' +
    'released and expire like any unused upload. A draft already deleted or sent is error 404. Sending a draft removes ' +
    'it by itself: do not delete it after send_draft. Needs the MailboxSend scope; mailboxAddress, when given, must be ' +
    "the draft's mailbox (else error 400). " +
    ERRORS_NOTE,
  input: describeFields(draftRefInputSchema, {
    draftId: DRAFT_ID,
    mailboxAddress: "Optional: the draft's mailbox (a domain token may name it; another mailbox is error 400).",
  }),
  output: draftDeletedSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  run: (input, { principal, services }) => services.drafts.delete(principal, input),
});
