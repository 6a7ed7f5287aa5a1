import type { Database } from '../../../storage/database.js';
import { AppError } from '../../base/errors.js';
import type { Principal } from '../../access/principal.js';
import { requireScope, resolveMailbox } from '../../access/access.js';
import type { EventBus } from '../../../storage/event-bus.js';
import { toSummary } from './message.views.js';
import type { WaitInput, WaitResult } from './wait.schemas.js';
import type { ConcurrencyCap } from '../../base/ratelimit/concurrency-cap.js';
import { ARRIVAL_EVENT, firstArrival, newestWithCode, type MessageFilter, type WaitFilter } from './wait.store.js';
import { senderFilterOf, UNAUTHENTICATED_WARNING } from './message-trust.js';
import type { ChangeSequences } from './change-sequence.js';
import {
  CODE_LOOKBACK_MS,
  type VerificationCodeInput,
  type VerificationCodeResult,
} from './verification-code.schemas.js';
import type { Direction, MessageSummary } from './message.schemas.js';
import { toDetailExtracted } from './message.views.js';

export interface WaitOptions {
  /** Ends the wait early (client gone, MCP request cancelled); answers as timed out. */
  signal?: AbortSignal | undefined;
}

export interface WaitServiceOptions {
  /**
   * Re-check this often even without a wake-up from the bus: a publish can be lost (the log is
   * the truth, the bus only says "look now"), and replicas without REDIS_URL share no bus.
   */
  fallbackPollMs: number;
}

/**
 * Long-poll for the next message of a mailbox (GET /api/messages/wait, MCP wait_for_message):
 * what agents doing sign-up or one-time-code flows need. Holds no database connection while it
 * waits: it scans the event log after `sinceEventId`, sleeps until the bus announces an arrival
 * in that mailbox (or the fallback poll fires), and scans again from where it stopped.
 */
export class WaitService {
  constructor(
    private readonly db: Database,
    private readonly bus: EventBus,
    /** The mailbox's event head: the change sequence, shared with change marks. */
    private readonly sequences: ChangeSequences,
    private readonly options: WaitServiceOptions = { fallbackPollMs: 5_000 },
    /** Long-polls one token may hold at once (MAX_WAITS_PER_TOKEN); unbounded without. */
    private readonly perToken?: ConcurrencyCap,
  ) {}

  async wait(principal: Principal, input: WaitInput, options: WaitOptions = {}): Promise<WaitResult> {
    requireScope(principal, 'MailboxRead');
    const release = this.perToken?.acquire(principal.tokenId);
    try {
      return await this.waitHeld(principal, input, options);
    } finally {
      release?.();
    }
  }

  private async waitHeld(principal: Principal, input: WaitInput, options: WaitOptions): Promise<WaitResult> {
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    const filter: WaitFilter = { direction: input.direction, ...filterOf(input) };
    let since: number | null = null;
    return this.until<WaitResult>(
      mailbox.id,
      filter.direction,
      performance.now() + input.timeoutMs,
      options.signal,
      async () => {
        // Read the head first, then scan up to it: whatever commits later has a higher sequence
        // number and is seen by the next scan, so nothing slips between two scans.
        let upTo = (await this.sequences.ofMailbox(mailbox.id)) ?? 0;
        if (since === null) {
          // Without sinceEventId only messages arriving from now on count: an old one-time code
          // already in the mailbox must not satisfy a new wait.
          since = input.sinceEventId === undefined ? upTo : Number(input.sinceEventId);
          // An id from another replica may be ahead of this one's memory: ask before refusing.
          if (since > upTo) upTo = (await this.sequences.fresh(mailbox.id)) ?? 0;
          if (since > upTo)
            throw new AppError(
              'VALIDATION_FAILED',
              `sinceEventId: ${since} is newer than the newest event of this mailbox (${upTo}).`,
            );
        }
        const match = upTo > since ? await firstArrival(this.db, mailbox.id, since, upTo, filter) : undefined;
        if (match) {
          const message = toSummary(match, mailbox.address);
          return { message, eventId: String(match.seq), timedOut: false, warning: warningOf(message) };
        }
        since = Math.max(since, upTo);
        return undefined;
      },
      () => ({ message: null, eventId: String(since ?? 0), timedOut: true, warning: null }),
    );
  }

  /**
   * The newest inbound message with a one-time code (MCP get_verification_code): stateless, so
   * calling again returns the same code; at once when such a mail is already there, else it
   * waits for arrivals like `wait` does.
   */
  async waitForCode(
    principal: Principal,
    input: VerificationCodeInput,
    options: WaitOptions = {},
  ): Promise<VerificationCodeResult> {
    requireScope(principal, 'MailboxRead');
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    const since = new Date(input.sinceTs ?? Date.now() - CODE_LOOKBACK_MS);
    const filter = filterOf(input);
    return this.until<VerificationCodeResult>(
      mailbox.id,
      'inbound',
      performance.now() + input.timeoutMs,
      options.signal,
      async () => {
        const row = await newestWithCode(this.db, mailbox.id, since, filter);
        if (!row) return undefined;
        const extracted = toDetailExtracted(row.extracted);
        const message = toSummary(row, mailbox.address);
        return {
          code: extracted.codes[0] ?? null,
          codes: extracted.codes,
          verificationLinks: extracted.links.filter((l) => l.kind === 'verification').map((l) => l.url),
          message,
          authenticated: message.authenticated,
          warning: warningOf(message),
          timedOut: false,
        };
      },
      () => ({
        code: null,
        codes: [],
        verificationLinks: [],
        message: null,
        authenticated: null,
        warning: null,
        timedOut: true,
      }),
    );
  }

  /**
   * The wait itself: probe, and while nothing is found sleep until the bus announces an arrival
   * in the mailbox (or the fallback poll fires) or the deadline passes. Holds no connection while
   * it sleeps. Subscribes before the first probe, so an arrival between probe and sleep still wakes it.
   */
  private async until<T>(
    mailboxId: string,
    direction: Direction,
    deadline: number,
    signal: AbortSignal | undefined,
    probe: () => Promise<T | undefined>,
    timedOut: () => T,
  ): Promise<T> {
    const wake = new Wake();
    const unsubscribe = this.bus.subscribe((event) => {
      if (event.mailboxId === mailboxId && event.type === ARRIVAL_EVENT[direction]) wake.ring();
    });
    // A reconnected bus may have dropped announcements: probe once more.
    const unresume = this.bus.onResume(() => wake.ring());
    try {
      for (;;) {
        wake.reset();
        const found = await probe();
        if (found !== undefined) return found;
        const left = deadline - performance.now();
        if (left <= 0 || signal?.aborted) return timedOut();
        await wake.wait(Math.min(left, this.options.fallbackPollMs), signal);
      }
    } finally {
      unsubscribe();
      unresume();
    }
  }
}

/** The filter both waits share; `from` was checked by the input schema. */
function filterOf(input: {
  from?: string | undefined;
  subjectContains?: string | undefined;
  requireAuthenticated: boolean;
}): MessageFilter {
  return {
    from: input.from === undefined ? null : senderFilterOf(input.from),
    subject: input.subjectContains?.toLowerCase() ?? null,
    requireAuthenticated: input.requireAuthenticated,
  };
}

const warningOf = (m: MessageSummary): string | null => (m.authenticated ? null : UNAUTHENTICATED_WARNING);

/** A level-triggered wake-up: a ring before `wait` is not lost. */
class Wake {
  private rung = false;
  private resolve: (() => void) | null = null;

  ring(): void {
    this.rung = true;
    this.resolve?.();
  }

  reset(): void {
    this.rung = false;
  }

  wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.rung || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.resolve = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.resolve = done;
    });
  }
}
