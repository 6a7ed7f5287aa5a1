import { listMailboxesQuerySchema, mailboxPageSchema } from '../../../core/state/mailboxes/mailbox.schemas.js';
import { defineTool, describeFields } from '../tool.js';

/** GET /api/domain/mailboxes. */
export const listMailboxesTool = defineTool({
  name: 'list_mailboxes',
  title: 'List the mailboxes of the domain',
  description:
    "List the enabled mailboxes of this domain token's domain, sorted by address, one page at a time (limit 1..200, default " +
    '100; pass nextCursor as cursor for the next page, null means no more). Use the addresses as mailboxAddress in the other ' +
    'tools. Needs a domain token with the DomainManage scope; a mailbox token gets error 403 (it knows its own mailbox). ' +
    'Errors come back as isError with text {"code", "errorCode", "errMsg"}.',
  input: describeFields(listMailboxesQuerySchema, {
    limit: 'Page size, 1..200. Default 100.',
    cursor: 'nextCursor of the previous page, unchanged. Omit for the first page.',
  }),
  output: mailboxPageSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.mailboxes.list(principal, input),
});
