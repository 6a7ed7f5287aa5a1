import { z } from 'zod';
import path from 'node:path';

const bool = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1');
const port = z.coerce.number().int().min(0).max(65535);
const durationMs = z
  .string()
  .regex(/^\d+(ms|s|m|h|d)?$/, 'a duration such as 500ms, 30s, 15m, 24h or 7d')
  .transform((v) => {
    const m = /^(\d+)(ms|s|m|h|d)?$/.exec(v)!;
    const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 'ms') as 'ms'];
    return Number(m[1]) * unit;
  });

/**
 * Every environment variable the service reads, with its default. Nothing else reads
 * process.env: the composition root loads this once and passes the frozen result down.
 */
export const configSchema = z.object({
  /** HTTP API, MCP and Socket.IO listen here. */
  PORT: port.default(8080),
  /** Address to bind every listener to. */
  HOST: z.string().default('0.0.0.0'),
  /** SMTP submission (token AUTH). */
  SMTP_SUBMISSION_PORT: port.default(587),
  /** Inbound MX for hosted addresses. */
  SMTP_MX_PORT: port.default(25),
  /** Embedded data: PGlite cluster, file blobs, generated server key, file secrets. */
  MAILBOX_DATA_DIR: z.string().default('./data'),
  /** postgres://… switches storage from embedded PGlite to PostgreSQL. */
  DATABASE_URL: z.string().url().optional(),
  /** Connections per process when DATABASE_URL is set. */
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** redis://… switches the event bus, Socket.IO adapter and rate limiter to Redis. */
  REDIS_URL: z.string().url().optional(),
  /** `fs` (under the data dir) or `postgres` (blob table; replicas need no shared volume). */
  BLOB_STORE: z.enum(['fs', 'postgres']).optional(),
  /** 32-byte key (base64 or hex) that encrypts revealable tokens; generated into the data dir when unset. */
  MAILBOX_SECRET_KEY: z.string().optional(),
  /** How long after creation a token's plaintext can be revealed. */
  TOKEN_REVEAL_WINDOW: durationMs.default(86_400_000),
  /** Default and maximum lifetime of a token minted without expiresAtTs. */
  TOKEN_DEFAULT_TTL: durationMs.default(90 * 86_400_000),
  /** Lifetime of the bootstrap token returned by mailbox creation. */
  BOOTSTRAP_TOKEN_TTL: durationMs.default(90 * 86_400_000),
  /** Sends per minute per mailbox unless a Domain or Mailbox resource says otherwise. */
  SEND_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(60),
  /** Failed password logins per address per 15 minutes before 429. */
  LOGIN_FAILURES_PER_15M: z.coerce.number().int().min(1).default(10),
  /** Largest attachment upload accepted (bytes). */
  MAX_ATTACHMENT_BYTES: z.coerce.number().int().min(1).default(25 * 1024 * 1024),
  /** Largest JSON body accepted (bytes). */
  MAX_JSON_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  /** Largest total recipients (to + cc + bcc) of one message. */
  MAX_RECIPIENTS: z.coerce.number().int().min(1).default(100),
  /** Directory of Domain/Mailbox YAML manifests applied at start and on change. */
  MAILBOX_RESOURCES_DIR: z.string().optional(),
  /** Roles this process serves (comma list). */
  MAILBOX_ROLES: z.string().default('api,smtp,realtime,worker'),
  /** How often the delivery worker polls for due outbox jobs when idle. */
  WORKER_POLL_INTERVAL: durationMs.default(1000),
  /** Lease a worker holds on a claimed job before another worker may take it. */
  WORKER_LEASE: durationMs.default(60_000),
  /** Age of retained events before the sweeper removes them. */
  EVENT_RETENTION: durationMs.default(7 * 86_400_000),
  /** Log level: debug, info, warn, error. */
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** Trust X-Forwarded-For for the client address (behind a proxy or ingress). */
  TRUST_PROXY: bool.default(false),
  /** Public base URL shown in docs and links. */
  PUBLIC_BASE_URL: z.string().url().optional(),
});

export type RawConfig = z.infer<typeof configSchema>;

export interface Config extends RawConfig {
  dataDir: string;
  blobStore: 'fs' | 'postgres';
}

export class ConfigError extends Error {}

/** Validates the environment once; a bad value becomes one line naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Readonly<Config> {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') picked[key] = value;
  }
  const parsed = configSchema.safeParse(picked);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = String(issue.path[0] ?? 'config');
    throw new ConfigError(`invalid ${key}=${JSON.stringify(picked[key] ?? '')}: ${issue.message}`);
  }
  const raw = parsed.data;
  return Object.freeze({
    ...raw,
    dataDir: path.resolve(raw.MAILBOX_DATA_DIR),
    blobStore: raw.BLOB_STORE ?? (raw.DATABASE_URL ? 'postgres' : 'fs'),
  });
}
