import http from 'node:http';
import path from 'node:path';
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import type { Config } from '../config/config.js';
import type { Logger } from '../core/base/logger.js';
import { createPinoLogger } from '../logging/pino-logger.js';
import { systemClock, type Clock } from '../core/base/time.js';
import { createServices, type Services } from '../core/services.js';
import { loadServerKey } from '../core/base/keys/server-key.js';
import { loadMailAuth } from '../core/state/mail/mailauth-module.js';
import { IntakeQueueWorker, type IntakeQueue } from '../core/flows/intake/intake-queue.worker.js';
import type { ClaimedRow } from '../core/flows/intake/intake-queue.store.js';
import { InboundQueue } from '../core/flows/inbound/inbound-queue.js';
import { SubmissionQueue } from '../core/flows/submission/submission-queue.js';
import { OutboxWorker } from '../core/flows/outbound/outbox-worker.js';
import { ApprovalNoticeWorker } from '../core/flows/outbound/approval-notice.worker.js';
import { WebhookWorker } from '../core/flows/webhooks/webhook-worker.js';
import { startResourceDirectory } from '../core/flows/resources/resource-runtime.js';
import { startEventSweeper } from '../core/state/events/event-sweeper.js';
import { startSubscriptionSweeper } from '../core/flows/event-subscriptions/subscription-sweeper.js';
import { startPolicySweeper } from '../core/flows/policy/policy-sweeper.js';
import { startFollowUps } from '../core/state/messages/follow-up.js';
import { startSearchIndexer } from '../core/state/search/search-indexer.js';
import { startReplyTextBackfill } from '../core/state/extraction/reply-text-backfill.js';
import { StorageSweeper, startStorageSweeper } from '../core/flows/housekeeping/storage-sweeper.js';
import { MailboxExpirySweeper, startMailboxExpiry } from '../core/flows/housekeeping/mailbox-expiry.js';
import { openOrmWhenReachable, migrate, type Orm } from '../storage/orm.js';
import { Database } from '../storage/database.js';
import { FsBlobStore } from '../storage/blobs/fs-blob-store.js';
import { FairGate } from '../storage/fair-gate.js';
import { PgBlobStore } from '../storage/blobs/pg-blob-store.js';
import { createEventBus } from '../storage/redis/event-bus-factory.js';
import { listen } from '../channels/shared/listen.js';
import { createMetrics } from '../telemetry/metrics.js';
import { currentTraceId, startTracing } from '../telemetry/tracing.js';
import { coreTelemetry } from '../telemetry/core-telemetry.js';
import { installObservability } from '../core/base/observability.js';
import { startAdminSocket, type AdminCommandHandler } from './admin-socket.js';

export const ROLES = ['api', 'smtp', 'realtime', 'worker'] as const;
export type Role = (typeof ROLES)[number];

export interface Runtime {
  services: Services;
  orm: Orm;
  /** Bound HTTP port when the api or realtime role runs (0 in config picks a free one). */
  httpPort: number | null;
  /** Bound SMTP ports when the smtp role runs. */
  smtpPorts: { submission: number | null; mx: number | null };
  close(): Promise<void>;
}

export interface StartOptions {
  roles?: readonly Role[];
  log?: Logger;
  clock?: Clock;
  /** Skip migrations (the Helm chart runs them in a hook Job). */
  skipMigrations?: boolean;
  /**
   * PGlite in memory instead of under the data dir (tests), empty or from a dump of a migrated
   * cluster (the test harness starts hundreds; initdb and the migrations are a second of each).
   */
  inMemoryDatabase?: boolean | { dump: Blob };
  /** The command that holds an embedded data directory (default `serve`); named by a second process. */
  command?: string;
  /**
   * What answers the admin commands another `mailbox` process hands over while this one holds an
   * embedded data directory (`<data dir>/admin.sock`, admin-socket.ts): `serve` passes the CLI's.
   */
  adminCommands?: (held: { services: Services; orm: Orm }) => AdminCommandHandler;
}

export function parseRoles(text: string): Role[] {
  const roles = text
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  const bad = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
  if (bad.length || roles.length === 0)
    throw new Error(`unknown role ${bad.join(',') || '(none)'}; roles are ${ROLES.join(',')}`);
  return roles as Role[];
}

/**
 * The composition root: config → storage → core services → channels, in that order, and the
 * reverse on close. Tests start it with `PORT=0` and an in-memory PGlite or a scratch database.
 */
export async function startRuntime(config: Readonly<Config>, options: StartOptions = {}): Promise<Runtime> {
  const log =
    options.log ??
    createPinoLogger(config.LOG_LEVEL, {
      context: () => {
        const tid = currentTraceId();
        return tid ? { tid } : {};
      },
    });
  const clock = options.clock ?? systemClock;
  // Idempotent; OTEL_* variables are read by the SDK itself, as the OpenTelemetry spec defines.
  await startTracing();
  installObservability(coreTelemetry);
  const roles = options.roles ?? parseRoles(config.MAILBOX_ROLES);

  const orm = await openOrmWhenReachable(
    {
      databaseUrl: config.DATABASE_URL,
      pgliteDir: config.DATABASE_URL || options.inMemoryDatabase ? undefined : path.join(config.dataDir, 'pglite'),
      pgliteDump: typeof options.inMemoryDatabase === 'object' ? options.inMemoryDatabase.dump : undefined,
      poolMax: config.DATABASE_POOL_MAX,
      preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
      lockAs: {
        command: options.command ?? 'serve',
        resourcesDir: config.MAILBOX_RESOURCES_DIR ? path.resolve(config.MAILBOX_RESOURCES_DIR) : null,
      },
    },
    config.DATABASE_START_WAIT,
    (attempt, err) => log.warn('storage.waiting', { attempt, message: (err as Error).message }),
  );
  if (!options.skipMigrations) {
    const applied = await migrate(orm);
    if (applied.length) log.info('storage.migrated', { applied });
  }
  const db = new Database(orm, { pipeline: Boolean(config.DATABASE_URL) && config.DATABASE_PIPELINE });
  const redis = config.REDIS_URL ? new Redis(config.REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: false }) : null;
  redis?.on('error', (err) => log.warn('redis.error', { message: err.message }));
  const blobs =
    config.blobStore === 'postgres'
      ? // Chunk I/O takes at most a quarter of the pool; the rest stays free for every other query.
        new PgBlobStore(
          db,
          new FairGate(Math.max(1, Math.floor((config.DATABASE_URL ? config.DATABASE_POOL_MAX : 1) / 4))),
        )
      : new FsBlobStore(path.join(config.dataDir, 'blobs'));
  const bus = createEventBus(redis, log);
  const serverKey = loadServerKey(config.MAILBOX_SECRET_KEY, config.dataDir);
  const services = createServices({ config, log, clock, db, blobs, bus, redis, serverKey });
  services.usage.start();
  const embedded = !config.DATABASE_URL && !options.inMemoryDatabase;
  // Before any listener: once /healthz answers, so do the admin commands.
  const adminSocket =
    embedded && options.adminCommands
      ? await startAdminSocket(config.dataDir, options.adminCommands({ services, orm }), log)
      : null;

  const closers: Array<() => Promise<void>> = [];
  let httpPort: number | null = null;
  // First pushed, so last run: after the HTTP drain, extractions still running give their claims back.
  closers.push(() => services.attachmentText.close());

  // The roles that verify inbound mail or sign outbound load mailauth before they accept anything:
  // its first evaluation holds the event loop for a few hundred ms (mailauth-module.ts).
  if (roles.includes('smtp') || roles.includes('worker')) await loadMailAuth();

  // SMTP listens before the HTTP server does: /healthz answering must mean every listener of this
  // process accepts connections (probes, tests), and making the STARTTLS certificate takes a moment.
  // Each channel is imported only by a process whose roles serve it: its protocol
  // library and route modules would otherwise sit in every process's heap (docs/design/memory.md);
  // test/cli/role-modules.test.ts holds this.
  const smtp = roles.includes('smtp')
    ? await (await import('../channels/smtp/index.js')).startSmtpServers(services)
    : null;
  const smtpPorts: Runtime['smtpPorts'] = smtp ? smtp.ports : { submission: null, mx: null };

  // One HTTP server carries the API + MCP (api role) and Socket.IO (realtime role); a process
  // with only the realtime role still serves /healthz, /readyz and /metrics on it, and so does an
  // smtp or worker process with HEALTH_SERVER=true (their Kubernetes probes and scraping).
  if (roles.includes('api') || roles.includes('realtime') || (config.HEALTH_SERVER && roles.length > 0)) {
    const [{ createHttpApp }, { gracefulClose }, { answerClientError }, { requestMetrics }] = await Promise.all([
      import('../channels/http/app.js'),
      import('../channels/http/graceful-close.js'),
      import('../channels/http/envelope.js'),
      import('../channels/http/request-metrics.js'),
    ]);
    const metrics = createMetrics(services);
    const app = createHttpApp(services, {
      apiRoutes: roles.includes('api'),
      extraRouters: roles.includes('api') ? await apiRouters(services) : [],
      middlewares: [requestMetrics],
      metrics,
    });
    const server = http.createServer(app.callback());
    server.on('clientError', answerClientError);
    server.keepAliveTimeout = 65_000;
    const drain = gracefulClose(server);
    const hub = roles.includes('realtime')
      ? await (await import('../channels/realtime/index.js')).startRealtime(services, server)
      : null;
    httpPort = await listen(server, config.PORT, config.HOST, 'PORT');
    log.info('http.listening', { port: httpPort, roles });
    // Requests in flight finish (an acknowledged 202 reaches its client); the rest is cut after HTTP_DRAIN_TIMEOUT.
    closers.push(() => drain(config.HTTP_DRAIN_TIMEOUT));
    // Pushed last so it closes first: open websockets would otherwise hold server.close() forever.
    if (hub) closers.push(() => hub.close());
  }
  // Pushed after the HTTP server's, so SMTP sessions are closed (421 4.3.2) before the health server.
  if (smtp) closers.push(() => smtp.close());
  if (roles.includes('worker')) {
    const worker = new OutboxWorker(services, {
      pollIntervalMs: config.WORKER_POLL_INTERVAL,
      leaseMs: config.WORKER_LEASE,
      concurrency: config.WORKER_CONCURRENCY,
      workerId: `${hostname()}:${process.pid}`,
      retry: { baseMs: config.DELIVERY_RETRY_BASE, maxMs: config.DELIVERY_RETRY_MAX },
    });
    worker.start();
    closers.push(() => worker.stop());
    // Approval links: the notices of held sends to the mailboxes' approvers (docs/workflow.md).
    const notices = new ApprovalNoticeWorker(services, {
      workerId: `${hostname()}:${process.pid}`,
      pollIntervalMs: config.WORKER_POLL_INTERVAL,
      leaseMs: config.WORKER_LEASE,
      ttlMs: config.APPROVAL_TTL,
      // Without PUBLIC_BASE_URL: this host at the port it serves HTTP on (set it behind a proxy).
      publicBaseUrl: config.PUBLIC_BASE_URL ?? `http://${services.transport.hostname}:${httpPort ?? config.PORT}`,
      retry: { baseMs: config.DELIVERY_RETRY_BASE, maxMs: config.DELIVERY_RETRY_MAX },
    });
    notices.start();
    closers.push(() => notices.stop());
    // Ports 25 and 587's queued intake: the messages their 250s promised, stored behind them.
    const startIntake = <Q extends ClaimedRow>(queue: IntakeQueue<Q>) => {
      const intake = new IntakeQueueWorker(db, queue, clock, log, {
        workerId: `${hostname()}:${process.pid}`,
        pollIntervalMs: config.INBOUND_QUEUE_POLL_INTERVAL,
        leaseMs: config.WORKER_LEASE,
        batch: 32,
        retry: { baseMs: config.DELIVERY_RETRY_BASE, maxMs: config.DELIVERY_RETRY_MAX },
        maxAttempts: 20,
      });
      intake.start();
      closers.push(() => intake.stop());
    };
    startIntake(new InboundQueue(db, services.transport.inbound, log));
    startIntake(new SubmissionQueue(db, services.transport.submission, log));
    const webhookWorker = new WebhookWorker(services, services.webhookCipher, {
      workerId: `${hostname()}:${process.pid}`,
      pollIntervalMs: config.WORKER_POLL_INTERVAL,
      leaseMs: config.WORKER_LEASE,
      timeoutMs: config.WEBHOOK_TIMEOUT,
      connectTimeoutMs: config.WEBHOOK_CONNECT_TIMEOUT,
      inFlightPerDomain: config.WEBHOOK_IN_FLIGHT_PER_DOMAIN,
      retry: { baseMs: config.WEBHOOK_RETRY_BASE, maxMs: config.WEBHOOK_RETRY_MAX },
      disableAfterMs: config.WEBHOOK_DISABLE_AFTER,
      concurrency: config.WEBHOOK_CONCURRENCY,
      policy: { allowPrivate: config.ALLOW_PRIVATE_NETWORK_TARGETS },
    });
    webhookWorker.start();
    closers.push(() => webhookWorker.stop());
    const eventSweeper = startEventSweeper(services.events, log);
    closers.push(() => eventSweeper.stop());
    const followUps = startFollowUps(services.followUps, log, config.WORKER_POLL_INTERVAL);
    closers.push(() => followUps.stop());
    const subscriptionSweeper = startSubscriptionSweeper(services.eventSubscriptions, log);
    closers.push(() => subscriptionSweeper.stop());
    const policySweeper = startPolicySweeper(services.approvals, services.auditStore, clock, log, {
      auditRetentionMs: config.EVENT_RETENTION,
    });
    closers.push(() => policySweeper.stop());
    const searchIndexer = startSearchIndexer(services.searchIndex, log);
    closers.push(() => searchIndexer.stop());
    const replyTexts = startReplyTextBackfill(services.replyTextBackfill, log);
    closers.push(() => replyTexts.stop());
    const storageSweeper = startStorageSweeper(
      new StorageSweeper(db, blobs, clock, { orphanGraceMs: config.BLOB_ORPHAN_GRACE, uploadTtlMs: config.UPLOAD_TTL }),
      log,
      config.STORAGE_SWEEP_INTERVAL,
    );
    closers.push(() => storageSweeper.stop());
    const mailboxExpiry = startMailboxExpiry(new MailboxExpirySweeper(db, blobs, clock), log);
    closers.push(() => mailboxExpiry.stop());
  }
  if (config.MAILBOX_RESOURCES_DIR) {
    const watcher = await startResourceDirectory(services, path.resolve(config.MAILBOX_RESOURCES_DIR));
    closers.push(() => watcher.stop());
  }
  const sweeper = setInterval(
    () => void services.tokens.sweepExpiredCiphertext().catch((err) => log.warn('token.sweep_failed', { err })),
    60_000,
  );
  sweeper.unref();

  return {
    services,
    orm,
    httpPort,
    smtpPorts,
    async close() {
      clearInterval(sweeper);
      await adminSocket?.close().catch((err) => log.warn('shutdown.error', { err }));
      for (const close of closers.reverse()) await close().catch((err) => log.warn('shutdown.error', { err }));
      await services.usage.stop().catch(() => undefined);
      await bus.close();
      redis?.disconnect();
      await orm.close(true);
    },
  };
}

/** MCP at /mcp and the web console: the api role's routers beside the /api routes. */
async function apiRouters(services: Services) {
  const [{ createMcpRouter }, { createConsoleRouter }] = await Promise.all([
    import('../channels/mcp/index.js'),
    import('../channels/http/console/static-site.js'),
  ]);
  return [createMcpRouter(services), createConsoleRouter()];
}
