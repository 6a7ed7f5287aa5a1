import { route, type RouteSpec } from '../route.js';
import { searchInputSchema, searchPageSchema } from '../../../core/state/search/search.schemas.js';

/**
 * Full-text search (docs/contract.md, Agent-native reading). Listed before the message routes in
 * routes/index.ts, like wait: `/api/messages/:messageId` would otherwise take `search` as an id.
 */
export const searchRoutes: RouteSpec[] = [
  route({
    method: 'GET',
    path: '/api/messages/search',
    summary:
      'Search one mailbox: words and "phrases" in subject and body, with from:, to:, subject:, has:attachment, ' +
      'is:read, is:unread, before:YYYY-MM-DD, after:YYYY-MM-DD, direction:inbound|outbound. Newest first, keyset-paged.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: ['mailbox', 'domain'],
    query: searchInputSchema,
    response: searchPageSchema,
    status: 200,
    handler: ({ principal, query, services }) => services.search.search(principal, query),
  }),
];
