import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ms, type Database } from '../../../storage/database.js';
import type { Principal } from '../../access/principal.js';
import { requireScope, resolveMailbox, visibilityOfMailbox } from '../../access/access.js';
import type { CursorCodec } from '../../base/paging/cursor.js';
import { toSummary } from '../messages/message.views.js';
import { searchPageQuery } from './message-search.store.js';
import { canonicalQuery, parseSearchQuery } from './search-query.js';
import type { SearchInput, SearchPage } from './search.schemas.js';
import type { SearchIndex } from './search-index.store.js';

const positionSchema = z.object({ t: z.number().int().min(0).max(8.64e15), i: z.string().min(1).max(200) }).strict();

/**
 * Full-text search of one mailbox (docs/api.md, "Search"). The mailbox is resolved exactly as
 * for the list (resolveMailbox) and the page is keyset-paged the same way, newest first, so mail
 * arriving while a client pages never shifts or repeats a later page.
 */
export class SearchService {
  constructor(
    private readonly db: Database,
    private readonly cursors: CursorCodec,
    private readonly index: SearchIndex,
  ) {}

  async search(principal: Principal, input: SearchInput): Promise<SearchPage> {
    const { mailbox, scope, sql } = await this.prepare(principal, input);
    // Mail stored since the indexer's last pass is indexed now, so the search sees all of it.
    await this.index.catchUp(mailbox.id);
    const rows = await this.db.rows(sql);
    const page = rows.slice(0, input.limit);
    const last = page[page.length - 1];
    return {
      items: page.map((r) => toSummary(r, mailbox.address)),
      nextCursor:
        rows.length > input.limit && last ? this.cursors.encode(scope, { t: ms(last.created_at)!, i: last.id }) : null,
    };
  }

  /**
   * Everything up to the query: scope, parsed q, the mailbox under the one visibility rule and
   * the cursor; returns the exact SQL of the page (one row more than the limit, to know whether
   * there is a next page). search() runs it; test/search/search-plan.test.ts EXPLAINs it.
   */
  async prepare(principal: Principal, input: SearchInput) {
    requireScope(principal, 'MailboxRead');
    const query = parseSearchQuery(input.q);
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    // The cursor is bound to the mailbox and to the parsed query: reused with another q it is a 400.
    const digest = createHash('sha256').update(canonicalQuery(query)).digest('base64url').slice(0, 16);
    const scope = `search:${mailbox.id}:${digest}`;
    const after = input.cursor ? this.cursors.decode(scope, input.cursor, positionSchema) : null;
    return {
      mailbox,
      scope,
      sql: searchPageQuery(visibilityOfMailbox(mailbox), mailbox.id, query, after, input.limit + 1),
    };
  }
}
