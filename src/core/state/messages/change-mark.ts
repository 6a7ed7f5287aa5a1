import { hash } from 'node:crypto';
import type { Database } from '../../../storage/database.js';
import { requireScope, resolveMailbox } from '../../access/access.js';
import type { Principal } from '../../access/principal.js';
import { targetVisibility } from './message.access.js';
import { changeSequenceOfDomain } from './change-mark.store.js';
import type { ChangeSequences } from './change-sequence.js';

/**
 * Bumped when the shape of a read changes, so a client holding a mark from an older build
 * refetches instead of keeping a representation this build would not produce.
 */
const REPRESENTATION = '1';

/** What a read looks at: one mailbox resolved like the list (`mailbox`), or by id (`target`). */
export type MarkedRead = 'mailbox' | 'target';

/** A read's answer with the change mark of the state it was read from. */
export interface Marked<T> {
  value: T;
  mark: string;
}

/**
 * Change marks (docs/api.md, "Change marks and ETags"): a short string that changes whenever
 * anything a read returns may have changed. Every change to a message, its recipients or its
 * approval appends an event, and appending an event bumps `mailbox.event_seq` in the same
 * transaction (events/event-log.ts). So the mark of a read is a hash of the event sequence of the
 * mailboxes it looks at, the caller's token and the request itself: equal marks mean an equal
 * answer, and computing one reads only the sequence (ChangeSequences: from memory where the bus
 * keeps it fresh), never messages.
 *
 * HTTP sends it as a weak ETag (304 on `If-None-Match`), MCP as `changeMark` / `ifChangedSince`.
 * A mark is either read before the data (`of`), so an answer is never older than its mark claims,
 * or taken from the sequence the data's own query returned (`ofSequence`: the list), which is exact.
 */
export class ChangeMarks {
  constructor(
    private readonly db: Database,
    private readonly sequences: ChangeSequences,
  ) {}

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
    return this.digest(principal, await this.sequence(principal, read, mailboxAddress), request);
  }

  /** The mark of a read of one mailbox that saw `sequence` (null: the mailbox is gone). */
  ofSequence(principal: Principal, mailboxId: string, sequence: number | null, request: string): string {
    return this.digest(principal, mailboxSequence(mailboxId, sequence), request);
  }

  private digest(principal: Principal, sequence: string, request: string): string {
    const digest = hash(
      'sha256',
      `${REPRESENTATION}\n${principal.tokenId}\n${sequence}\n${request}`,
      'base64url',
    ).slice(0, 22);
    return `cm1.${digest}`;
  }

  private async sequence(principal: Principal, read: MarkedRead, mailboxAddress: string | undefined): Promise<string> {
    if (read === 'mailbox') {
      const mailbox = await resolveMailbox(this.db, principal, mailboxAddress);
      return mailboxSequence(mailbox.id, await this.sequences.ofMailbox(mailbox.id));
    }
    const visibility = await targetVisibility(this.db, principal, mailboxAddress);
    // What a domain token sees by id spans its domain's mailboxes, and which mailboxes those are
    // changes without an event: always read.
    return visibility.kind === 'mailbox'
      ? mailboxSequence(visibility.mailboxId, await this.sequences.ofMailbox(visibility.mailboxId))
      : `d:${visibility.domainId}:${await changeSequenceOfDomain(this.db, visibility.domainId)}`;
  }
}

const mailboxSequence = (mailboxId: string, sequence: number | null) => `m:${mailboxId}:${sequence ?? 'gone'}`;
