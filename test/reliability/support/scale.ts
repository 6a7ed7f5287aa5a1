/**
 * `make reliability` sets RELIABILITY=full: the sizes (10 000 submissions, three kills,
 * 1 000 outbound messages, five worker kills, longer fuzzing). Inside `make test` the same tests
 * run at the short sizes, so every rule is still checked on every commit.
 */
export const FULL = process.env.RELIABILITY === 'full';

/** The short size inside `make test`, the full one under `make reliability`. */
export const scale = <T>(short: T, full: T): T => (FULL ? full : short);
