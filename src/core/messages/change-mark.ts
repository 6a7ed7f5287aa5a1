import { createHash } from 'node:crypto';
import type { Database } from '../../storage/database.js';
import { requireScope, resolveMailbox } from '../auth/access.js';
import type { Principal } from '../auth/principal.js';
import { targetVisibility } from './message.access.js';
import { changeSequenceOfDomain, changeSequenceOfMailbox } from './change-mark.store.js';

/**
 * Bumped when the shape of a read changes, so a client holding a mark from an older build
 * refetches instead of keeping a representation this build would not produce.
 */
const REPRESENTATION = '1';

/** What a read looks at: one mailbox resolved like the list (`mailbox`), or by id (`target`). */
export type MarkedRead = 'mailbox' | 'target';

/**
 * Change marks (docs/api.md, "Change marks and ETags"): a short string that changes whenever
 * anything a read returns may have changed. Every change to a message, its recipients or its
 * approval appends an event, and appending an event bumps `mailbox.event_seq` in the same
 * transaction (events/event-log.ts). So the mark of a read is a hash of the event sequence of the
 * mailboxes it looks at, the caller's token and the request itself: equal marks mean an equal
 * answer, and computing one reads only `mailbox` rows, never messages.
 *
 * HTTP sends it as a weak ETag (304 on `If-None-Match`), MCP as `changeMark` / `ifChangedSince`.
 * The mark is read before the data, so an answer is never older than its mark claims.
 */
export class ChangeMarks {
  constructor(private readonly db: Database) {}

  /**
   * The mark of `request` (a channel's canonical description of the call: path and query, or a
   * tool name and its arguments) as `principal` reads it. Refuses exactly like the read would
   * (scope, mailbox address), so a mark never answers for a read that would fail.
   */
  async of(
    principal: Principal,
    read: MarkedRead,
    mailboxAddress: string | undefined,
    request: string,
  ): Promise<string> {
    requireScope(principal, 'MailboxRead');
    const sequence = await this.sequence(principal, read, mailboxAddress);
    const digest = createHash('sha256')
      .update(`${REPRESENTATION}\n${principal.tokenId}\n${sequence}\n${request}`)
      .digest('base64url')
      .slice(0, 22);
    return `cm1.${digest}`;
  }

  private async sequence(principal: Principal, read: MarkedRead, mailboxAddress: string | undefined): Promise<string> {
    if (read === 'mailbox') {
      const mailbox = await resolveMailbox(this.db, principal, mailboxAddress);
      return `m:${mailbox.id}:${await changeSequenceOfMailbox(this.db, mailbox.id)}`;
    }
    const visibility = await targetVisibility(this.db, principal, mailboxAddress);
    return visibility.kind === 'mailbox'
      ? `m:${visibility.mailboxId}:${await changeSequenceOfMailbox(this.db, visibility.mailboxId)}`
      : `d:${visibility.domainId}:${await changeSequenceOfDomain(this.db, visibility.domainId)}`;
  }
}
