import { pino, stdSerializers, type DestinationStream } from 'pino';
import pretty from 'pino-pretty';
import type { Logger, LogLevel } from '../core/base/logger.js';

export interface PinoLoggerOptions {
  /** Fields added to every line (the active trace id, so a log line and the response's `tid` match). */
  context?: () => Record<string, unknown>;
  /** File descriptor written to: 1 (stdout, the default) or 2 (stderr, for one-shot commands). */
  fd?: 1 | 2;
  /** Human-readable colour lines instead of JSON; defaults to "is that descriptor a terminal". */
  pretty?: boolean;
  /** A stream to write to instead of the descriptor. */
  stream?: DestinationStream;
  /** Each JSON line, without its newline, instead of a descriptor (tests keep them in memory). */
  onLine?: (line: string) => void;
}

/**
 * The core's Logger port implemented with pino: one JSON object per line
 * (`{ level, ts, event, tid?, ...fields }`, the shape log collectors already parse) when the output
 * is a pipe or a file, pino-pretty's coloured lines when a person watches a terminal. The core never
 * imports this file; the runtime (src/runtime/runtime.ts) passes the Logger in.
 */
export function createPinoLogger(level: LogLevel, options: PinoLoggerOptions = {}): Logger {
  const fd = options.fd ?? 1;
  const isTty = fd === 1 ? process.stdout.isTTY : process.stderr.isTTY;
  const onLine = options.onLine;
  const destination =
    options.stream ??
    (onLine ? { write: (chunk: string) => onLine(chunk.replace(/\n$/, '')) } : undefined) ??
    ((options.pretty ?? isTty === true)
      ? pretty({
          destination: fd,
          colorize: true,
          sync: true,
          messageKey: 'event',
          timestampKey: 'ts',
          translateTime: 'HH:MM:ss.l',
          ignore: 'pid,hostname',
        })
      : pino.destination({ dest: fd, sync: true }));
  const context = options.context ?? (() => ({}));
  const base = pino(
    {
      level,
      base: undefined,
      messageKey: 'event',
      timestamp: () => `,"ts":"${new Date().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
      mixin: context,
      // Every field named like an error is serialised with its message and stack, whatever its key.
      serializers: { err: stdSerializers.err, error: stdSerializers.err },
    },
    destination,
  );
  const emit = (lvl: LogLevel) => (event: string, fields?: Record<string, unknown>) => {
    if (!base.isLevelEnabled(lvl)) return;
    base[lvl](fields ?? {}, event);
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}
