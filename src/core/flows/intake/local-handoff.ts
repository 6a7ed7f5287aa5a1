import type { ClaimedRow } from './intake-queue.store.js';

/** The claim a queue row is written with when this process's worker takes it straight from the intake. */
export interface HandoffClaim {
  lockedBy: string;
  leaseUntil: Date;
}

/** The worker of this process, as the intake of the same queue sees it (IntakeQueueWorker). */
export interface HandoffReceiver<Q extends ClaimedRow> {
  /** A claim for the next row, or null when the worker has no room (the row goes in unclaimed). */
  reserve(): HandoffClaim | null;
  /**
   * The row being written with a claim from `reserve`: prepare it now (parse, verification) and
   * store it once `committed` resolves; when it rejects the row was never written, and its place
   * is given back with nothing stored or recorded.
   */
  take(q: Q, committed: Promise<unknown>): void;
  /** A row went in unclaimed: look at the queue now. */
  kick(): void;
}

/**
 * Between one queue's intake and the worker of the same process. When the worker has room, the
 * intake writes the row already claimed for it (locked_by, lease_until, attempts 1) and hands it
 * over as it holds it in memory: no claim UPDATE (a round trip and a commit) and no read of the
 * message back. It is handed over while its commit is in flight, so the worker parses and verifies
 * during the commit's WAL flush and writes the message rows right after it (a row it stores only
 * once committed: its transaction deletes the row). A row whose worker dies is due again when its
 * lease ends, like one the claim query took. Without a worker here (the smtp role alone) or with a busy one, the row
 * goes in unclaimed and any worker's claim takes it.
 */
export class LocalHandoff<Q extends ClaimedRow> {
  private receiver: HandoffReceiver<Q> | null = null;

  /** The worker starts taking rows; the returned function stops it. */
  attach(receiver: HandoffReceiver<Q>): () => void {
    this.receiver = receiver;
    return () => {
      if (this.receiver === receiver) this.receiver = null;
    };
  }

  /**
   * Writes one row through `write` (its commit included), with the worker's claim when it has
   * room; `asClaimed` builds the row the worker is handed, with the commit in flight.
   */
  async write(write: (claim: HandoffClaim | null) => Promise<void>, asClaimed: (claim: HandoffClaim) => Q) {
    const receiver = this.receiver;
    const claim = receiver?.reserve() ?? null;
    const written = write(claim);
    if (claim) receiver!.take(asClaimed(claim), written); // a failed write gives the place back there
    await written;
    if (!claim) receiver?.kick();
  }
}
