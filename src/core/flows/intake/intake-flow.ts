import { setTimeout as sleep } from 'node:timers/promises';

/** How often an smtp process reads a queue's depth while mail arrives: at most once per interval. */
export const FLOW_SAMPLE_MS = 100;

export interface IntakeFlowOptions {
  /** Queue rows waiting for a worker at which new messages start to wait (SMTP_QUEUE_HIGH_WATER). */
  highWater: number;
  /** The longest a new message waits for the queue to drop below it (SMTP_IN_FLOW_DELAY; 0: never waits). */
  delayMs: number;
  /** How old a depth reading may be: every admit reads at most this often per process. */
  sampleMs: number;
}

/**
 * What admit did: `open` (the queue was below its high water), `drained` (it waited and the queue
 * dropped below), `delayed` (it waited the whole delay and the message is taken anyway).
 */
export type FlowOutcome = 'open' | 'drained' | 'delayed';

/**
 * Flow control of a queued intake, Postfix's in_flow_delay by queue depth: a 250 promises that the
 * worker stores the message, and a queue that grows faster than the workers drain it only moves
 * the wait from the client to the mailbox (mail stored minutes late, the event later still). So
 * while the queue holds `highWater` rows or more, a new message (at MAIL FROM, before its bytes
 * are sent) waits until the depth drops below, at most `delayMs`, and is then taken anyway: senders
 * slow to the rate the workers store at, and nothing is refused for it (a refusal here would be a
 * retry storm from every peer). The depth is read at most every `sampleMs` per process, shared by
 * every session: between readings a MAIL FROM waits for nothing.
 * docs/api.md, "Queued intake".
 */
export class IntakeFlow {
  private depth = 0;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<number> | null = null;

  constructor(
    private readonly readDepth: () => Promise<number>,
    private readonly options: IntakeFlowOptions,
  ) {}

  async admit(): Promise<FlowOutcome> {
    const { highWater, delayMs, sampleMs } = this.options;
    if (delayMs <= 0) return 'open';
    // A reading at most sampleMs old: one count per process per interval, whatever the rate.
    if (performance.now() - this.readAt >= sampleMs) await this.read();
    if (this.depth < highWater) return 'open';
    const until = performance.now() + delayMs;
    while (this.depth >= highWater) {
      const left = until - performance.now();
      if (left <= 0) return 'delayed';
      await sleep(Math.min(sampleMs, left));
      await this.read();
    }
    return 'drained';
  }

  /** One reading at a time, shared by every session waiting for it; a failed read keeps the last depth. */
  private read(): Promise<number> {
    this.reading ??= this.readDepth()
      .then(
        (depth) => {
          this.depth = depth;
          return depth;
        },
        () => this.depth, // flow control never refuses mail: the last known depth stands
      )
      .finally(() => {
        this.readAt = performance.now();
        this.reading = null;
      });
    return this.reading;
  }
}
