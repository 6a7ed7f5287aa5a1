/**
 * The core's logging port: an event name and fields, never a token. The one implementation is
 * src/logging/pino-logger.ts (JSON lines with the active trace id, so a line and the response's
 * `tid` match), passed in by whoever composes the process (runtime, operator, tests).
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export interface Logger {
  debug(event: string, fields?: Record<string, unknown>): void;
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
