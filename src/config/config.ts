import { z } from 'zod';
import path from 'node:path';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
/**
 * Which proxies may report the client address in X-Forwarded-For (docs/api.md, "Client address"):
 * none (`false`, `0`, unset), the N proxies nearest to us (`N`; `true` is 1, never "believe the
 * leftmost entry"), or the proxies whose addresses are in a comma list of CIDRs (a bare address
 * is a /32 or /128).
 */
export type TrustProxy = { kind: 'hops'; hops: number } | { kind: 'cidrs'; cidrs: readonly string[] };
const trustProxy = z
  .string()
  .trim()
  .transform((v, ctx): TrustProxy => {
    const lower = v.toLowerCase();
    if (lower === '' || lower === 'false') return { kind: 'hops', hops: 0 };
    if (lower === 'true') return { kind: 'hops', hops: 1 };
    if (/^\d+$/.test(v) && Number(v) <= 32) return { kind: 'hops', hops: Number(v) };
    const cidrs = v.split(',').map((c) => c.trim());
    // Strict address syntax (node:net): ipaddr.js alone would take `1.5` as an address.
    const bad = cidrs.filter((c) => isIP(c.split('/')[0]!) === 0 || (c.includes('/') && !ipaddr.isValidCIDR(c)));
    if (bad.length === 0) return { kind: 'cidrs', cidrs };
    ctx.addIssue({
      code: 'custom',
      message: `a hop count 0..32, false, true or a comma list of CIDRs (not ${bad[0]})`,
    });
    return z.NEVER;
  });
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
  SMTP_HOSTNAME: z
    .string()
    .regex(/^[A-Za-z0-9.-]+$/)
    .optional(),
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
  /** Group commit of SMTP intake: messages that arrive while a commit is in flight share the next transaction, their statements pipelined together (docs/api.md, "SMTP intake"). */
  SMTP_GROUP_COMMIT: bool.default(true),
  /** Queued intake on 25: the 250 follows the commit of a queue row, and the worker role stores the message behind it (docs/api.md, "Queued intake"). */
  SMTP_INBOUND_QUEUE: bool.default(true),
  /** With queued intake on 25: while fewer than this many messages are being stored by this process, a message is stored before its 250 (one commit, no queue row), as Exim delivers at once below smtp_accept_queue; 0 always queues (docs/api.md, "Queued intake"). */
  SMTP_INBOUND_DIRECT_BELOW: z.coerce.number().int().min(0).default(0),
  /** Queued submission on 587: every decision before the 250, which follows the commit of a queue row; the worker role writes the message behind it (docs/api.md, "Queued intake"). */
  SMTP_SUBMISSION_QUEUE: bool.default(true),
  /** Flow control of queued intake, Postfix's in_flow_delay by depth: at this many messages waiting in a queue, a new MAIL FROM on its port waits for the workers (docs/api.md, "Queued intake"). */
  SMTP_QUEUE_HIGH_WATER: z.coerce.number().int().min(1).default(1_000),
  /** The longest a MAIL FROM waits while its queue is over SMTP_QUEUE_HIGH_WATER; the message is then taken anyway. 0: no flow control. */
  SMTP_IN_FLOW_DELAY: durationMs.default(1_000),
  /** How often an idle worker looks for mail another process queued on 25 or 587 (mail queued in its own process is taken at once). */
  INBOUND_QUEUE_POLL_INTERVAL: durationMs.default(250),
  /** Failed credentials (bearer tokens on HTTP/MCP/Socket.IO, SMTP AUTH, password logins) per client address per 15 minutes before 429 / 454. */
  AUTH_FAILURES_PER_15M: z.coerce.number().int().min(1).default(20),
  /** Direct MX delivery (and webhooks) may connect to loopback, private, link-local and metadata addresses (development and tests only). */
  ALLOW_PRIVATE_NETWORK_TARGETS: bool.default(false),
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
  /** How long SPF/DKIM/DMARC and MX answers (and "no such name") are reused; 0: ask every time. */
  DNS_CACHE_TTL: durationMs.default(60_000),
  /** Embedded data: PGlite cluster, file blobs, generated server key, file secrets. */
  MAILBOX_DATA_DIR: z.string().default('./data'),
  /** postgres://… switches storage from embedded PGlite to PostgreSQL. */
  DATABASE_URL: z
    .string()
    .url()
    .refine((v) => /^postgres(ql)?:\/\//i.test(v), 'must be a postgres:// or postgresql:// URL')
    .optional(),
  /**
   * How long a starting process waits for an unreachable database (DATABASE_URL) before it exits,
   * retrying with backoff and logging each try; 0 exits at once. Keep it under the pod's startup
   * probe budget (the chart: 180 s), so the pod waits instead of crash-looping.
   */
  DATABASE_START_WAIT: durationMs.default(120_000),
  /** Connections per process when DATABASE_URL is set. */
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /**
   * Repeated parameterised statements run as named prepared statements (parsed and planned once
   * per connection). `false` for a pooler that cannot carry them (PgBouncer in transaction mode
   * before 1.21).
   */
  DATABASE_PREPARED_STATEMENTS: bool.default(true),
  /**
   * Message writes (SMTP intake, sends) send the statements of their transaction together: one
   * round trip for the lot instead of one each (src/storage/statement-pipeline.ts). PostgreSQL only.
   */
  DATABASE_PIPELINE: bool.default(true),
  /** redis://… switches the event bus, Socket.IO adapter and rate limiter to Redis. */
  REDIS_URL: z
    .string()
    .url()
    .refine((v) => /^rediss?:\/\//i.test(v), 'must be a redis:// or rediss:// URL')
    .optional(),
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
  /**
   * How long a mailbox's change sequence (change marks, ETags) is kept in memory without news from
   * the event bus; only where the bus reaches every process (PGlite, or REDIS_URL). 0 disables.
   */
  CHANGE_SEQUENCE_MAX_AGE: durationMs.default(1_000),
  /** Lifetime of the bootstrap token returned by mailbox creation. */
  BOOTSTRAP_TOKEN_TTL: durationMs.default(90 * 86_400_000),
  /** Sends per minute per mailbox unless a Domain or Mailbox resource says otherwise. */
  SEND_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(60),
  /** Failed password logins per (mailbox address, client address) per 15 minutes before 429; past as many from all addresses, the mailbox's logins slow down. */
  LOGIN_FAILURES_PER_15M: z.coerce.number().int().min(1).default(10),
  /** Wait before each password check of a mailbox with LOGIN_FAILURES_PER_15M failures from all addresses (never a refusal). */
  LOGIN_ACCOUNT_SLOWDOWN: durationMs.default(1_000),
  /** Password hashes (scrypt) running at once in the process; the rest of the libuv thread pool stays free for files and crypto. */
  PASSWORD_HASH_CONCURRENCY: z.coerce.number().int().min(1).default(2),
  /** Password hashes running at once for one client address. */
  PASSWORD_HASH_CONCURRENCY_PER_ADDRESS: z.coerce.number().int().min(1).default(1),
  /** Largest attachment upload accepted (bytes). */
  MAX_ATTACHMENT_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(25 * 1024 * 1024),
  /** Largest JSON body accepted (bytes). */
  MAX_JSON_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  /** Open Socket.IO connections one token may hold per process (429 connect_error beyond). */
  MAX_SOCKETS_PER_TOKEN: z.coerce.number().int().min(1).default(20),
  /** Long-polls (GET /api/messages/wait, MCP wait_for_message) one token may hold at once per process (429 beyond). */
  MAX_WAITS_PER_TOKEN: z.coerce.number().int().min(1).default(10),
  /** How often a waiting MCP tool call (wait_for_message) reports progress to a client that passed a progressToken. */
  MCP_PROGRESS_INTERVAL: durationMs.refine((ms) => ms > 0, 'must be above 0').default(10_000),
  /** How often a held MCP events/stream sends a heartbeat and re-checks its token (the Events extension asks for ≤ 30 s). */
  MCP_EVENTS_HEARTBEAT: durationMs.default(15_000),
  /** MCP events/stream requests one token may hold open at once per process (-32013 beyond). */
  MAX_EVENT_STREAMS_PER_TOKEN: z.coerce.number().int().min(1).default(20),
  /** Real-time replays (handshake with lastEventId) one token may have in flight at once per process (429 connect_error beyond). */
  MAX_REPLAYS_PER_TOKEN: z.coerce.number().int().min(1).default(4),
  /** Uploads no send claimed yet that one mailbox may hold (429 UPLOADS_PENDING_LIMIT beyond). */
  MAX_PENDING_UPLOADS_PER_MAILBOX: z.coerce.number().int().min(1).default(100),
  /** Upload bodies one process reads at once; the rest wait unread (docs/api.md, "Storage quota"). */
  UPLOAD_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(4),
  /** Bytes of unclaimed uploads one mailbox may hold (429 UPLOADS_PENDING_LIMIT beyond). */
  MAX_PENDING_UPLOAD_BYTES_PER_MAILBOX: z.coerce
    .number()
    .int()
    .min(1)
    .default(256 * 1024 * 1024),
  /** Largest total recipients (to + cc + bcc) of one message. */
  MAX_RECIPIENTS: z.coerce.number().int().min(1).default(100),
  /** Directory of Domain/Mailbox YAML manifests applied at start and on change. */
  MAILBOX_RESOURCES_DIR: z.string().optional(),
  /** Serve /healthz, /readyz and /metrics on PORT also in processes without the api or realtime role (smtp, worker). */
  HEALTH_SERVER: bool.default(false),
  /** `mailbox operator`: port of its /healthz and /metrics. */
  OPERATOR_PORT: port.default(8081),
  /** `mailbox operator`: the one namespace whose Domains and Mailboxes it reconciles; all namespaces when unset. */
  OPERATOR_WATCH_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a namespace name')
    .optional(),
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
  /** Outbox jobs one worker process runs side by side, each its own claim (SKIP LOCKED). */
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** Delay after a failed delivery attempt; doubles with each further attempt (half fixed, half random). */
  DELIVERY_RETRY_BASE: durationMs.refine((ms) => ms > 0, 'must be above 0').default(60_000),
  /** Ceiling of one delivery retry delay. */
  DELIVERY_RETRY_MAX: durationMs.refine((ms) => ms > 0, 'must be above 0').default(3_600_000),
  /** A message held for approval and not decided within this long expires as rejected (docs/api.md). */
  APPROVAL_TTL: durationMs.refine((ms) => ms > 0, 'must be above 0').default(72 * 3_600_000),
  /** Loop guard: replies one mailbox may send to one counterparty per hour before 429. */
  AUTO_REPLY_LIMIT_PER_HOUR: z.coerce.number().int().min(1).default(10),
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
  /** Proxies whose X-Forwarded-For is believed: `false`/unset none, a hop count N (`true` = 1), or a comma list of CIDRs. */
  TRUST_PROXY: trustProxy.default({ kind: 'hops', hops: 0 }),
  /** Public base URL shown in docs and links, approval links included (unset there: http://<SMTP_HOSTNAME>:<PORT>). */
  PUBLIC_BASE_URL: z.string().url().optional(),
  /** Attachment text (docs/api.md): largest file text is extracted from (413 beyond). */
  ATTACHMENT_TEXT_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(10 * 1024 * 1024),
  /** Attachment text: time limit of one extraction, in its own process (422 beyond). */
  ATTACHMENT_TEXT_TIMEOUT: durationMs.refine((ms) => ms > 0, 'must be above 0').default(10_000),
  /** Attachment text: characters returned at most (the rest is cut, truncated: true). */
  ATTACHMENT_TEXT_MAX_CHARS: z.coerce.number().int().min(1).default(1_000_000),
  /** Attachment text (docs/attachment-extraction.md): resident memory of one extractor process, MiB. */
  ATTACHMENT_TEXT_MAX_MEMORY: z.coerce.number().int().min(64).default(192),
  /** Attachment text: inflated bytes of one DOCX zip entry, and of the entries read, at most. */
  ATTACHMENT_TEXT_MAX_INFLATED: z.coerce
    .number()
    .int()
    .min(1)
    .default(32 * 1024 * 1024),
  /** Attachment text: extractor processes at once per server process; the rest wait their tenant's turn. */
  ATTACHMENT_TEXT_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /** Webhooks: time limit of one delivery attempt (connect, send, 2xx answer). */
  WEBHOOK_TIMEOUT: durationMs.refine((ms) => ms > 0, 'must be above 0').default(5_000),
  /** Webhooks: time limit of the TCP (and TLS) connect inside one attempt. */
  WEBHOOK_CONNECT_TIMEOUT: durationMs.refine((ms) => ms > 0, 'must be above 0').default(2_000),
  /** Webhooks: delay after the first failed attempt, doubling per attempt (half fixed, half random). */
  WEBHOOK_RETRY_BASE: durationMs.refine((ms) => ms > 0, 'must be above 0').default(5_000),
  /** Webhooks: ceiling of one retry delay. */
  WEBHOOK_RETRY_MAX: durationMs.refine((ms) => ms > 0, 'must be above 0').default(3_600_000),
  /** Webhooks: a webhook failing without a success for this long is disabled (event webhook.disabled). */
  WEBHOOK_DISABLE_AFTER: durationMs.refine((ms) => ms > 0, 'must be above 0').default(86_400_000),
  /** Webhooks: deliveries in flight at once per worker process. */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** Webhooks: deliveries of one domain in flight at once across all workers (the rest wait for other tenants). */
  WEBHOOK_IN_FLIGHT_PER_DOMAIN: z.coerce.number().int().min(1).max(64).default(2),
  /** Webhooks: live registrations of one mailbox at most (WEBHOOK_LIMIT_REACHED beyond). */
  WEBHOOK_MAX_PER_MAILBOX: z.coerce.number().int().min(1).max(1000).default(10),
  /** Webhooks: live registrations of one domain at most, its mailboxes' included (WEBHOOK_LIMIT_REACHED beyond). */
  WEBHOOK_MAX_PER_DOMAIN: z.coerce.number().int().min(1).max(10_000).default(25),
});

export type RawConfig = z.infer<typeof configSchema>;

export interface Config extends RawConfig {
  dataDir: string;
  blobStore: 'fs' | 'postgres';
}

export class ConfigError extends Error {}

/** Variables whose value may hold a password, a key or a URL with credentials: never printed. */
export const SECRET_VARIABLES: ReadonlySet<string> = new Set([
  'DATABASE_URL',
  'REDIS_URL',
  'SMTP_RELAY_URL',
  'MAILBOX_SECRET_KEY',
  'SMTP_TLS_KEY',
  'SMTP_TLS_CERT',
]);

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
    // The value is echoed only where it cannot hold a credential (URLs carry passwords, keys are keys).
    const shown = SECRET_VARIABLES.has(key) ? '' : `=${JSON.stringify(picked[key] ?? '')}`;
    throw new ConfigError(`invalid ${key}${shown}: ${issue.message}`);
  }
  const raw = parsed.data;
  return Object.freeze({
    ...raw,
    dataDir: path.resolve(raw.MAILBOX_DATA_DIR),
    blobStore: raw.BLOB_STORE ?? (raw.DATABASE_URL ? 'postgres' : 'fs'),
  });
}
