import { draftRefInputSchema, draftSchema } from '../../../core/state/drafts/draft.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE } from './fields.js';
import { DRAFT_NOTE } from './create-draft.js';

export const DRAFT_ID = 'A draftId from create_draft or list_drafts (opaque, starts with drf_).';
export const DRAFT_MAILBOX =
  'Optional. When given, the draft must belong to that mailbox (a mailbox token naming another mailbox: error 400). ' +
  'When omitted, a mailbox token sees its own drafts and a domain token those of every mailbox of its domain.';

/** GET /api/drafts/{draftId}. */
export const getDraftTool = defineTool({
  name: 'get_draft',
  title: 'Get a draft',
  description:
    'Read one draft in full, bodies included, before changing it with update_draft or sending it with send_draft. ' +
    DRAFT_NOTE +
    'A draft that was sent or deleted, or that this token may not see, is error 404. Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  input: describeFields(draftRefInputSchema, { draftId: DRAFT_ID, mailboxAddress: DRAFT_MAILBOX }),
  output: draftSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.drafts.get(principal, input),
});
