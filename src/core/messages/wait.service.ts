import type { Database } from '../../storage/database.js';
import { AppError } from '../errors.js';
import type { Principal } from '../auth/principal.js';
import { requireScope, resolveMailbox } from '../auth/access.js';
import type { EventBus } from '../events/event-bus.js';
import { toSummary } from './message.views.js';
import type { WaitInput, WaitResult } from './wait.schemas.js';
import { ARRIVAL_EVENT, eventHead, firstArrival, type WaitFilter } from './wait.store.js';

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
    private readonly options: WaitServiceOptions = { fallbackPollMs: 5_000 },
  ) {}

  async wait(principal: Principal, input: WaitInput, options: WaitOptions = {}): Promise<WaitResult> {
    requireScope(principal, 'MailboxRead');
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    const filter: WaitFilter = {
      direction: input.direction,
      from: input.from?.toLowerCase() ?? null,
      subject: input.subjectContains?.toLowerCase() ?? null,
    };
    const deadline = performance.now() + input.timeoutMs;

    // Subscribe before the first scan, so an arrival between scan and sleep still wakes us.
    const wake = new Wake();
    const unsubscribe = this.bus.subscribe((event) => {
      if (event.mailboxId === mailbox.id && event.type === ARRIVAL_EVENT[filter.direction]) wake.ring();
    });
    // A reconnected bus may have dropped announcements: scan once more.
    const unresume = this.bus.onResume(() => wake.ring());
    try {
      const head = await eventHead(this.db, mailbox.id);
      // Without sinceEventId only messages arriving from now on count: an old one-time code
      // already in the mailbox must not satisfy a new wait.
      let since = input.sinceEventId === undefined ? head : Number(input.sinceEventId);
      if (since > head) throw new AppError('VALIDATION_FAILED', `sinceEventId: ${since} is newer than the newest event of this mailbox (${head}).`);
      for (;;) {
        wake.reset();
        // Read the head first, then scan up to it: whatever commits later has a higher sequence
        // number and is seen by the next scan, so nothing slips between two scans.
        const upTo = await eventHead(this.db, mailbox.id);
        const match = upTo > since ? await firstArrival(this.db, mailbox.id, since, upTo, filter) : undefined;
        if (match) return { message: toSummary(match, mailbox.address), eventId: String(match.seq), timedOut: false };
        since = Math.max(since, upTo);
        const left = deadline - performance.now();
        if (left <= 0 || options.signal?.aborted) return { message: null, eventId: String(since), timedOut: true };
        await wake.wait(Math.min(left, this.options.fallbackPollMs), options.signal);
      }
    } finally {
      unsubscribe();
      unresume();
    }
  }
}

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
