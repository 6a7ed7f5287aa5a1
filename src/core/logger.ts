/**
 * Structured JSON lines on stdout. The active trace id is added by the telemetry module's
 * hook, so a log line and the response's `tid` match. Never pass a token here.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export interface Logger {
  debug(event: string, fields?: Record<string, unknown>): void;
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function createLogger(
  level: LogLevel,
  context: () => Record<string, unknown> = () => ({}),
  write: (line: string) => void = (l) => process.stdout.write(l + '\n'),
): Logger {
  const emit = (lvl: LogLevel) => (event: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < ORDER[level]) return;
    write(JSON.stringify({ ts: new Date().toISOString(), level: lvl, event, ...context(), ...fields }, errorReplacer));
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

function errorReplacer(_key: string, value: unknown): unknown {
  return value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value;
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
