import path from 'node:path';
import { z } from 'zod';
import { AppError } from '../core/base/errors.js';

/**
 * The admin hand-off's wire form (docs/api.md, "The mailbox command"): over `<data dir>/admin.sock`
 * a connection carries one request, a JSON line, and one answer, a JSON document the server ends
 * the connection after. The answer holds what the command would have printed (`output`) or the
 * error it would have failed with, and the exit status either way.
 */
export const HANDOFF_VERSION = 1;
/** A request is a command line; the largest legitimate one is a few hundred bytes. */
export const MAX_REQUEST_BYTES = 64 * 1024;
export const SOCKET_NAME = 'admin.sock';

export const socketPath = (dataDir: string): string => path.join(dataDir, SOCKET_NAME);

/** sun_path holds 108 bytes with its NUL (Linux; 104 on BSDs and macOS): the longest name bind(2) takes. */
const MAX_SOCKET_PATH_BYTES = process.platform === 'linux' ? 107 : 103;

/**
 * The name to bind or connect to: the path, or when it is longer than a Unix socket name can be (a
 * deep data directory) the same file relative to the working directory; null when both are too long.
 */
export function bindableAddress(file: string): string | null {
  if (Buffer.byteLength(file) <= MAX_SOCKET_PATH_BYTES) return file;
  const relative = path.relative(process.cwd(), file);
  return Buffer.byteLength(relative) <= MAX_SOCKET_PATH_BYTES ? relative : null;
}

const requestSchema = z.strictObject({
  v: z.literal(HANDOFF_VERSION),
  /** The words after `mailbox`: `mailbox create`, `apply`, `migrate`. */
  command: z.string().min(1).max(100),
  args: z.array(z.string()).max(16),
  /** Keyed by commander's attribute name (`--display-name` is `displayName`). */
  options: z.record(z.string(), z.string()),
});
export type HandoffRequest = z.infer<typeof requestSchema>;

const answerSchema = z.union([
  z.strictObject({ exitCode: z.literal(0), output: z.unknown() }),
  z.strictObject({
    exitCode: z.number().int().min(1).max(255),
    error: z.strictObject({ message: z.string(), errorCode: z.string().optional() }),
  }),
]);
export type HandoffAnswer = z.infer<typeof answerSchema>;

/** A request or answer that is not one: too large, not JSON, not the shape above. */
export class HandoffProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HandoffProtocolError';
  }
}

/** The command failed in the server; `message` and `exitCode` are what it would have failed with here. */
export class HandedOffCommandError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'HandedOffCommandError';
  }
}

export function request(command: string, args: readonly string[], options: Record<string, string>): HandoffRequest {
  return { v: HANDOFF_VERSION, command, args: [...args], options };
}

export const encodeRequest = (req: HandoffRequest): string => JSON.stringify(req) + '\n';

export function decodeRequest(text: string): HandoffRequest {
  if (Buffer.byteLength(text) > MAX_REQUEST_BYTES)
    throw new HandoffProtocolError(`request too large: more than ${MAX_REQUEST_BYTES} bytes`);
  return decode(requestSchema, text, 'request');
}

export const encodeAnswer = (answer: HandoffAnswer): string => JSON.stringify(answer) + '\n';

export const decodeAnswer = (text: string): HandoffAnswer => decode(answerSchema, text, 'answer');

/** What a failed command answers: its message (all of it; the CLI prints it as it prints its own) and catalog code. */
export function failure(err: unknown): HandoffAnswer {
  const message = err instanceof Error ? err.message : String(err);
  return {
    exitCode: err instanceof HandedOffCommandError ? err.exitCode : 1,
    error: { message, ...(err instanceof AppError ? { errorCode: err.code } : {}) },
  };
}

function decode<T>(schema: z.ZodType<T>, text: string, what: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HandoffProtocolError(`malformed ${what}: not JSON`);
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new HandoffProtocolError(`malformed ${what}: ${issue.path.join('.') || 'value'}: ${issue.message}`);
}
