/**
 * What storage writes to the log: a warning when a connection is lost or regained. The core's
 * Logger satisfies it; storage names its own need so that it imports nothing from the core.
 */
export interface StorageLog {
  warn(event: string, fields?: Record<string, unknown>): void;
}
