import { z } from 'zod';
import { limitSchema } from '../../base/paging/cursor.js';
import { messageSummarySchema } from '../messages/message.schemas.js';

/** GET /api/messages/search and MCP search_messages; the grammar of q is parsed by the core (400s there). */
export const searchInputSchema = z.object({
  q: z.string().max(2000),
  mailboxAddress: z.string().trim().max(320).optional(),
  limit: limitSchema,
  cursor: z.string().min(1).max(500).optional(),
});
export type SearchInput = z.infer<typeof searchInputSchema>;

/**
 * A page of matches, newest first. No totalCount: counting every match of a common word in a
 * large mailbox costs as much as the search itself (docs/api.md, "Search").
 */
export const searchPageSchema = z.object({
  items: z.array(messageSummarySchema),
  nextCursor: z.string().nullable(),
});
export type SearchPage = z.infer<typeof searchPageSchema>;
