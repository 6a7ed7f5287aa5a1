/** Backoff of the delivery worker. */
export interface RetryPolicy {
  /** Delay after the first failed attempt; doubles with every further attempt. */
  baseMs: number;
  /** Ceiling of one delay. */
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { baseMs: 60_000, maxMs: 60 * 60_000 };

/**
 * Exponential backoff with "equal jitter": half of base·2^(attempt−1) (capped) fixed, the other
 * half random, so jobs that failed together (a relay outage) do not all come back in the same
 * second, while no delay drops below half its step.
 */
export function retryDelayMs(
  attempt: number,
  policy: RetryPolicy = DEFAULT_RETRY,
  random: () => number = Math.random,
): number {
  const step = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 30));
  return Math.round(step / 2 + random() * (step / 2));
}
