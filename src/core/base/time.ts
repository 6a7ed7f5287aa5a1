/** Wire timestamps: integer Unix milliseconds, null when it has not happened (docs/contract.md). */
export const toTs = (d: Date | string | null | undefined): number | null =>
  d === null || d === undefined ? null : new Date(d).getTime();

/** The clock, injectable so expiry and reveal-window rules can be tested without sleeping. */
export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };
