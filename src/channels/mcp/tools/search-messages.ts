import { searchInputSchema, searchPageSchema } from '../../../core/state/search/search.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_ACTING } from './fields.js';

/** GET /api/messages/search. */
export const searchMessagesTool = defineTool({
  name: 'search_messages',
  title: 'Search messages',
  description:
    'Full-text search of one mailbox, newest first, one page at a time (summaries; call get_message for a body). ' +
    'q holds words (all must occur in subject or body, whole words, case-insensitive), "quoted phrases", and operators: ' +
    'from:TEXT and to:TEXT (substring of an address or sender name), subject:WORD or subject:"a phrase", has:attachment, ' +
    'is:read, is:unread, before:YYYY-MM-DD (that day excluded), after:YYYY-MM-DD (that day included, UTC), ' +
    'direction:inbound|outbound. Everything must hold. Example: from:github.com subject:"verification code" after:2026-01-01. ' +
    'An unknown operator or a malformed value is error 400 naming it. When nextCursor is not null, call again with cursor ' +
    'and the same q. Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  input: describeFields(searchInputSchema, {
    q: 'The search, e.g. `invoice from:acme.example is:unread`.',
    mailboxAddress: MAILBOX_ADDRESS_ACTING,
    limit: 'Page size, 1..200. Default 100.',
    cursor: 'nextCursor of the previous page, unchanged, with the same q. Omit for the first page.',
  }),
  output: searchPageSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.search.search(principal, input),
});
