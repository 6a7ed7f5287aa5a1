/**
 * A resource that cannot converge yet or as declared (its Domain is missing, its address is
 * held by another resource…). It becomes Ready=False with `reason`; the controller retries
 * with backoff, so a condition that clears by itself (the Domain appears) heals without a touch.
 */
export class NotReadyError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'NotReadyError';
  }
}

/** A problem that does not stop the rest of the resource converging (one alias, the password). */
export interface Problem {
  reason: string;
  message: string;
}
