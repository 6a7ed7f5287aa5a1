import { draftIdParamsSchema, draftSchema, updateDraftBodySchema } from '../../../core/state/drafts/draft.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE } from './fields.js';
import { DRAFT_FIELDS, DRAFT_NOTE } from './create-draft.js';
import { DRAFT_ID } from './get-draft.js';

/** PATCH /api/drafts/{draftId}. */
export const updateDraftTool = defineTool({
  name: 'update_draft',
  title: 'Change a draft',
  description:
    'Change a saved draft: give only the fields to change. An absent field is kept, null clears subject, bodyText, ' +
    'bodyHtml, parentMessageId or sendAt, and a list (toAddress, ccAddresses, bccAddresses, attachmentIds) replaces ' +
    'the whole list ([] empties it). Answers the draft as it is now and emits draft.updated. ' +
    DRAFT_NOTE +
    "Needs the MailboxSend scope; with a domain token mailboxAddress, when given, must be the draft's mailbox (else " +
    'error 400). ' +
    ERRORS_NOTE,
  input: describeFields(updateDraftBodySchema, {
    ...DRAFT_FIELDS,
    mailboxAddress: "Optional: the draft's mailbox (a domain token may name it; another mailbox is error 400).",
  }).safeExtend({ draftId: draftIdParamsSchema.shape.draftId.describe(DRAFT_ID) }),
  output: draftSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: ({ draftId, ...input }, { principal, services }) => services.drafts.update(principal, draftId, input),
});
