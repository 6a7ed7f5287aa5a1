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
  /** Name in SMTP greetings, Received headers and bounces; the host name when unset. */
  SMTP_HOSTNAME: z.string().regex(/^[A-Za-z0-9.-]+$/).optional(),
  /** STARTTLS certificate: a PEM file path or the PEM itself; a self-signed one is generated into the data dir when unset. */
  SMTP_TLS_CERT: z.string().optional(),
  /** Private key of SMTP_TLS_CERT: a PEM file path or the PEM itself. */
  SMTP_TLS_KEY: z.string().optional(),
  /** Offer and accept AUTH on submission before STARTTLS (development only). */
  SMTP_ALLOW_INSECURE_AUTH: bool.default(false),
  /** Largest message accepted over SMTP, counted on the bytes received (announced as SIZE). */
  SMTP_MAX_MESSAGE_BYTES: z.coerce.number().int().min(1024).default(36_700_160),
  /** Concurrent SMTP connections per listener. */
  SMTP_MAX_CONNECTIONS: z.coerce.number().int().min(1).default(1000),
  /** Concurrent SMTP connections from one client address per listener. */
  SMTP_MAX_CONNECTIONS_PER_CLIENT: z.coerce.number().int().min(1).default(50),
  /** An SMTP client silent this long is disconnected (RFC 5321 §4.5.3.2.7 suggests 5 minutes). */
  SMTP_IDLE_TIMEOUT: durationMs.default(300_000),
  /** Longest SMTP session: a client dribbling a byte at a time never goes idle, so the session itself ends here (421 4.4.2). */
  SMTP_SESSION_TIMEOUT: durationMs.refine((ms) => ms > 0, 'must be above 0').default(1_800_000),
  /** On shutdown, SMTP sessions in flight get this long to finish before `421 4.3.2` (the chart passes smtp.closeTimeoutSeconds). */
  SMTP_CLOSE_TIMEOUT: durationMs.refine((ms) => ms > 0, 'must be above 0').default(5_000),
  /** Failed credentials (bearer tokens on HTTP/MCP/Socket.IO, SMTP AUTH, password logins) per client address per 15 minutes before 429 / 454. */
  AUTH_FAILURES_PER_15M: z.coerce.number().int().min(1).default(20),
  /** smtp://user:pass@host:port (STARTTLS when offered) or smtps://… : the relay for external recipients. */
  SMTP_RELAY_URL: z.string().url().optional(),
  /** External delivery: `relay` (SMTP_RELAY_URL), `mx` (direct to the recipient's MX) or `none`; default relay when SMTP_RELAY_URL is set, else none. */
  SMTP_DELIVERY: z.enum(['relay', 'mx', 'none']).optional(),
  /** Port of remote MX hosts in SMTP_DELIVERY=mx. */
  SMTP_DELIVERY_PORT: port.default(25),
  /** A recipient still failing temporarily after this long fails for good and bounces. */
  MAX_DELIVERY_AGE: durationMs.default(48 * 3_600_000),
  /** DNS servers (comma list of ip[:port]) for SPF/DKIM/DMARC checks and MX lookups; the system resolver when unset. */
  DNS_SERVERS: z.string().optional(),
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
  /** How long a verified token is cached per process; a token disabled on another replica is refused within it. 0 disables. */
  AUTH_CACHE_TTL: durationMs.default(500),
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
  /** Serve /healthz, /readyz and /metrics on PORT also in processes without the api or realtime role (smtp, worker). */
  HEALTH_SERVER: bool.default(false),
  /** `mailbox operator`: port of its /healthz and /metrics. */
  OPERATOR_PORT: port.default(8081),
  /** `mailbox operator`: the one namespace whose Domains and Mailboxes it reconciles; all namespaces when unset. */
  OPERATOR_WATCH_NAMESPACE: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a namespace name').optional(),
  /** `mailbox operator`: namespace of the leader-election Lease (the chart sets the release namespace). */
  OPERATOR_LEASE_NAMESPACE: z.string().default('default'),
  /** `mailbox operator`: name of the leader-election Lease; replicas sharing it have one leader. */
  OPERATOR_LEASE_NAME: z.string().default('mailbox-operator'),
  /** `mailbox operator`: full relist and reconcile of everything (renews tokens, heals missed events). */
  OPERATOR_RESYNC: durationMs.default(300_000),
  /** `mailbox operator`: a kubeconfig file; in-cluster service account (or ~/.kube/config) when unset. */
  KUBECONFIG: z.string().optional(),
  /** Roles this process serves (comma list). */
  MAILBOX_ROLES: z.string().default('api,smtp,realtime,worker'),
  /** How often the delivery worker polls for due outbox jobs when idle. */
  WORKER_POLL_INTERVAL: durationMs.default(1000),
  /** Lease a worker holds on a claimed job before another worker may take it. */
  WORKER_LEASE: durationMs.default(60_000),
  /** Delay after a failed delivery attempt; doubles with each further attempt (half fixed, half random). */
  DELIVERY_RETRY_BASE: durationMs.refine((ms) => ms > 0, 'must be above 0').default(60_000),
  /** Ceiling of one delivery retry delay. */
  DELIVERY_RETRY_MAX: durationMs.refine((ms) => ms > 0, 'must be above 0').default(3_600_000),
  /** Age of retained events before the sweeper removes them. */
  EVENT_RETENTION: durationMs.default(7 * 86_400_000),
  /** Newest events kept per mailbox; older ones are swept even inside EVENT_RETENTION. */
  EVENT_RETENTION_MAX_PER_MAILBOX: z.coerce.number().int().min(1).default(10_000),
  /** How often the worker deletes orphan blobs and expired uploads (first pass a minute after start); 0 disables. */
  STORAGE_SWEEP_INTERVAL: durationMs.default(3_600_000),
  /** An unreferenced blob younger than this is kept: its row may not have committed yet. */
  BLOB_ORPHAN_GRACE: durationMs.default(3_600_000),
  /** Uploaded attachments no send claimed are deleted, with their blobs, after this long. */
  UPLOAD_TTL: durationMs.default(86_400_000),
  /** Origins allowed to open the real-time connection (comma list, `*` any); no Origin and same-origin are always allowed. */
  REALTIME_ALLOWED_ORIGINS: z.string().default(''),
  /** Browser origins allowed on /mcp (comma list, `*` any); no Origin and same-origin are always allowed (MCP: DNS-rebinding defence). */
  MCP_ALLOWED_ORIGINS: z.string().default(''),
  /** Log level: debug, info, warn, error. */
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** On shutdown, HTTP requests in flight get this long to finish before their connections are cut. */
  HTTP_DRAIN_TIMEOUT: durationMs.refine((ms) => ms > 0, 'must be above 0').default(10_000),
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
