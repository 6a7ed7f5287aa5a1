import type { Database, Sql, WriteTxOptions } from './database.js';

/** One caller's writes, run inside a shared transaction; it may run twice (see CommitGroup). */
export type GroupWork<T> = (trx: Sql) => Promise<T>;

interface Member {
  /** Members are written in this order, so two groups take their row locks in the same order. */
  lockKey: string;
  work: GroupWork<unknown>;
  options: WriteTxOptions;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** Thrown inside the group transaction to roll it back after a member failed. */
class MemberFailed extends Error {}

/**
 * Group commit: the writes of callers that arrive while a group transaction is in flight run
 * together in the next one, so they share one BEGIN, one COMMIT and one WAL flush. Nobody waits
 * for company: a caller arriving when fewer than `concurrency` groups are in flight starts one
 * at once, alone if need be. Each caller's promise settles only after the COMMIT of the
 * transaction that holds its rows (so an SMTP 250 still means durable).
 *
 * A member that fails must not fail the others: its error rolls the group back and every member
 * of that group then runs again in a transaction of its own, so each gets its own outcome (the
 * failing one its error, the others their commit). A work function must therefore be safe to
 * run again after a rollback (fresh ids, nothing kept from the first run). An error of the COMMIT
 * itself (a lost connection: the outcome is unknown) is every member's error, never retried.
 */
export class CommitGroup {
  private queue: Member[] = [];
  private inFlight = 0;

  constructor(
    private readonly db: Database,
    private readonly options: { maxMembers: number; concurrency: number } = { maxMembers: 32, concurrency: 2 },
  ) {}

  /** `options.commitWithStatements`: see Database.writeTx; a group commits so when all its members may. */
  run<T>(lockKey: string, work: GroupWork<T>, options: WriteTxOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ lockKey, work, options, resolve: resolve as (v: unknown) => void, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0 && this.inFlight < this.options.concurrency) {
      const members = this.queue.splice(0, this.options.maxMembers);
      this.inFlight++;
      void this.commit(members).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async commit(members: Member[]): Promise<void> {
    if (members.length === 1) return this.alone(members[0]!);
    members.sort((a, b) => (a.lockKey < b.lockKey ? -1 : a.lockKey > b.lockKey ? 1 : 0));
    let results: unknown[] = [];
    try {
      await this.db.writeTx(
        async (trx) => {
          // Started together, in lock-key order: pipelined (Database.writeTx), the members'
          // statements share round trips; either way each must settle before the COMMIT.
          const outcomes = await Promise.allSettled(members.map((m) => m.work(trx)));
          const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
          if (failed) throw new MemberFailed('a member of the group failed', { cause: failed.reason });
          results = outcomes.map((o) => (o as PromiseFulfilledResult<unknown>).value);
        },
        { commitWithStatements: members.every((m) => m.options.commitWithStatements === true) },
      );
    } catch (err) {
      if (err instanceof MemberFailed) {
        await Promise.all(members.map((m) => this.alone(m)));
        return;
      }
      for (const m of members) m.reject(err);
      return;
    }
    members.forEach((m, i) => m.resolve(results[i]));
  }

  private async alone(m: Member): Promise<void> {
    try {
      m.resolve(await this.db.writeTx(m.work, m.options));
    } catch (err) {
      m.reject(err);
    }
  }
}
