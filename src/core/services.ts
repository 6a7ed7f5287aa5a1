import type { Redis } from 'ioredis';
import type { BaseServices } from './base/services.js';
import type { AccessServices } from './access/services.js';
import type { StateServices } from './state/services.js';
import type { FlowServices } from './flows/services.js';
import type { Config } from '../config/config.js';
import type { Database } from '../storage/database.js';
import type { BlobStore } from '../storage/blobs/blob-store.js';
import type { Logger } from './base/logger.js';
import type { Clock } from './base/time.js';
import { TokenCipher } from './access/token-cipher.js';
import { TokenAuthenticator } from './access/token-authenticator.js';
import { TokenGovernance } from './access/token-governance.js';
import { TokenMinter } from './access/token-minter.js';
import { TokenStore } from './access/token.store.js';
import { UsageRecorder } from './access/usage-recorder.js';
import { CursorCodec } from './base/paging/cursor.js';
import { MailboxService } from './state/mailboxes/mailbox.service.js';
import { LoginService } from './access/login.service.js';
import { AuthThrottle } from './access/auth-throttle.js';
import { PasswordHashGate } from './access/password-hash-gate.js';
import { RateLimits } from './base/ratelimit/rate-limits.js';
import { deriveKey } from './base/keys/server-key.js';
import type { EventBus } from '../storage/event-bus.js';
import { MessageService } from './state/messages/message.service.js';
import { SendService } from './flows/sending/send.service.js';
import { insertOutboxJob } from './flows/sending/outbound.store.js';
import { AttachmentService } from './state/attachments/attachment.service.js';
import { InboundStore } from './flows/inbound/inbound.store.js';
import { createMailTransport } from './flows/delivery/mail-transport.js';
import { WaitService } from './state/messages/wait.service.js';
import { ChangeMarks } from './state/messages/change-mark.js';
import { announcingLocally, ChangeSequences } from './state/messages/change-sequence.js';
import { ConcurrencyCap } from './base/ratelimit/concurrency-cap.js';
import { FairGate } from '../storage/fair-gate.js';
import { EventService } from './state/events/event.service.js';
import { PolicyStore } from './flows/policy/policy.store.js';
import { OutboundPolicy } from './flows/policy/outbound-policy.js';
import { ApprovalStore } from './flows/policy/approval.store.js';
import { ApprovalService } from './flows/policy/approval.service.js';
import { MailboxPolicyService } from './flows/policy/mailbox-policy.service.js';
import { ApprovalCredentials } from './access/approval-credential.js';
import { ApprovalLinkStore } from './flows/policy/approval-link.store.js';
import { ApprovalLinkService } from './flows/policy/approval-link.service.js';
import { AuditStore } from './state/audit/audit.store.js';
import { AuditService } from './state/audit/audit.service.js';
import { ScreeningReleaseService } from './flows/inbound/release.service.js';
import { SearchService } from './state/search/search.service.js';
import { SearchIndex } from './state/search/search-index.store.js';
import { ReplyTextBackfill } from './state/extraction/reply-text-backfill.js';
import { AttachmentTextService } from './state/attachments/text/attachment-text.service.js';
import { WebhookService } from './flows/webhooks/webhook.service.js';
import { EventSubscriptionService } from './flows/event-subscriptions/subscription.service.js';
import { StorageService } from './state/quota/storage.service.js';
import { ThreadStateService } from './state/messages/thread-state.service.js';
import { FollowUps } from './state/messages/follow-up.js';
import { DraftService } from './state/drafts/draft.service.js';
import { DraftSendService } from './flows/sending/draft-send.js';

/**
 * Everything a channel may call, built once by the composition root: one group per floor of the
 * core (ARCHITECTURE.md, "Floors"). A worker inside the core takes only the groups of its floor and
 * those below it, never the whole.
 */
export type Services = BaseServices & AccessServices & StateServices & FlowServices;

export interface CoreDeps {
  config: Readonly<Config>;
  log: Logger;
  clock: Clock;
  db: Database;
  blobs: BlobStore;
  bus: EventBus;
  redis: Redis | null;
  serverKey: Buffer;
}

export function createServices(deps: CoreDeps): Services {
  const { config, log, clock, db, blobs, redis, serverKey } = deps;
  // Sequences are remembered only where the bus reaches every process that writes: one process
  // (PGlite locks its data dir) or Redis between replicas; PostgreSQL without Redis may be several
  // processes sharing no bus (docs/api.md, "Change marks and ETags").
  const changeSequences = new ChangeSequences(db, deps.bus, {
    cached: (redis !== null || !config.DATABASE_URL) && config.CHANGE_SEQUENCE_MAX_AGE > 0,
    maxAgeMs: config.CHANGE_SEQUENCE_MAX_AGE,
  });
  const bus = announcingLocally(deps.bus, changeSequences);
  const changeMarks = new ChangeMarks(db, changeSequences);
  const cipher = new TokenCipher(deriveKey(serverKey, 'token-cipher'));
  const cursors = new CursorCodec(deriveKey(serverKey, 'cursor'));
  const searchIndex = new SearchIndex(db);
  const replyTextBackfill = new ReplyTextBackfill(db);
  const usage = new UsageRecorder(db);
  const throttle = new AuthThrottle(redis, config.AUTH_FAILURES_PER_15M, log, config.AUTH_CACHE_TTL);
  const tokenStore = new TokenStore(db);
  const tokenAuth = new TokenAuthenticator(tokenStore, clock, usage, throttle, config.AUTH_CACHE_TTL);
  const tokenMinter = new TokenMinter(tokenStore, cipher, clock, {
    revealWindowMs: config.TOKEN_REVEAL_WINDOW,
    defaultTtlMs: config.TOKEN_DEFAULT_TTL,
  });
  const tokens = new TokenGovernance(db, tokenStore, tokenMinter, tokenAuth, cipher, clock, log);
  const limits = new RateLimits(redis, {
    sendPerMinute: config.SEND_RATE_LIMIT_PER_MINUTE,
    loginFailuresPer15m: config.LOGIN_FAILURES_PER_15M,
  });
  const mailboxes = new MailboxService(db, tokenMinter, cursors, clock, { bootstrapTtlMs: config.BOOTSTRAP_TOKEN_TTL });
  const hashes = new PasswordHashGate({
    concurrency: config.PASSWORD_HASH_CONCURRENCY,
    concurrencyPerAddress: config.PASSWORD_HASH_CONCURRENCY_PER_ADDRESS,
    maxQueuedPerAddress: 8,
    maxQueued: 256,
  });
  const login = new LoginService(db, throttle, tokenMinter, cipher, limits, clock, log, hashes, {
    defaultTtlMs: config.TOKEN_DEFAULT_TTL,
    accountFailuresBeforeSlowdown: config.LOGIN_FAILURES_PER_15M,
    accountSlowdownMs: config.LOGIN_ACCOUNT_SLOWDOWN,
  });
  const messages = new MessageService(db, bus, cursors, clock, changeMarks, changeSequences);
  const inbound = new InboundStore(db, bus, clock);
  const attachments = new AttachmentService(db, blobs, clock, {
    maxBytes: config.MAX_ATTACHMENT_BYTES,
    maxPending: config.MAX_PENDING_UPLOADS_PER_MAILBOX,
    maxPendingBytes: config.MAX_PENDING_UPLOAD_BYTES_PER_MAILBOX,
    concurrentUploads: config.UPLOAD_CONCURRENCY,
  });
  const auditStore = new AuditStore(db);
  const policyStore = new PolicyStore(db);
  const policy = new OutboundPolicy(policyStore, auditStore, blobs, clock, {
    autoReplyLimitPerHour: config.AUTO_REPLY_LIMIT_PER_HOUR,
  });
  const approvalStore = new ApprovalStore(db);
  const approvals = new ApprovalService(
    db,
    approvalStore,
    auditStore,
    bus,
    clock,
    log,
    { ttlMs: config.APPROVAL_TTL },
    (trx, messageId, mailboxId, at) => insertOutboxJob(trx, messageId, mailboxId, null, at),
  );
  // Approval links: their own key, so a link's signature can never be any other HMAC of the service.
  const approvalCredentials = new ApprovalCredentials(deriveKey(serverKey, 'approval-link'));
  const approvalLinkStore = new ApprovalLinkStore(db, approvalCredentials);
  const approvalLinks = new ApprovalLinkService(db, approvalLinkStore, approvals, approvalCredentials, throttle, clock);
  const sending = new SendService(
    db,
    bus,
    limits,
    clock,
    log,
    { maxRecipients: config.MAX_RECIPIENTS },
    policy,
    auditStore,
  );
  const drafts = new DraftService(db, cursors, clock, bus, log, changeMarks);
  const transport = createMailTransport({
    config,
    log,
    clock,
    db,
    blobs,
    bus,
    redis,
    cipher,
    tokenAuth,
    sending,
    inbound,
    policy,
  });
  const events = new EventService(db, clock, {
    retentionMs: config.EVENT_RETENTION,
    maxPerMailbox: config.EVENT_RETENTION_MAX_PER_MAILBOX,
  });
  const waits = new WaitService(
    db,
    bus,
    changeSequences,
    { fallbackPollMs: 5_000 },
    new ConcurrencyCap(config.MAX_WAITS_PER_TOKEN, 'TOO_MANY_WAITS'),
  );
  const caps = {
    sockets: new ConcurrencyCap(config.MAX_SOCKETS_PER_TOKEN, 'TOO_MANY_SOCKETS'),
    replays: new ConcurrencyCap(config.MAX_REPLAYS_PER_TOKEN, 'TOO_MANY_REPLAYS'),
    eventStreams: new ConcurrencyCap(config.MAX_EVENT_STREAMS_PER_TOKEN, 'TOO_MANY_EVENT_STREAMS'),
  };
  // PGlite is one connection: one replay page at a time; PostgreSQL: a quarter of the pool.
  const replayGate = new FairGate(Math.max(1, Math.floor((config.DATABASE_URL ? config.DATABASE_POOL_MAX : 1) / 4)));
  const webhookCipher = new TokenCipher(deriveKey(serverKey, 'webhook-secret'));
  return {
    config,
    log,
    clock,
    db,
    blobs,
    bus,
    redis,
    cipher,
    cursors,
    usage,
    tokenAuth,
    tokenMinter,
    tokens,
    mailboxes,
    login,
    hashes,
    limits,
    messages,
    changeMarks,
    changeSequences,
    sending,
    drafts,
    draftSending: new DraftSendService(db, drafts, sending, clock),
    attachments,
    inbound,
    events,
    waits,
    transport,
    caps,
    replayGate,
    policy,
    mailboxPolicies: new MailboxPolicyService(db, policyStore),
    approvals,
    approvalCredentials,
    approvalLinkStore,
    approvalLinks,
    screeningRelease: new ScreeningReleaseService(db, auditStore, bus, clock, log),
    threads: new ThreadStateService(db, cursors, clock, bus, log),
    followUps: new FollowUps(db, bus, clock, log),
    approvalStore,
    audit: new AuditService(db, auditStore, cursors),
    auditStore,
    search: new SearchService(db, cursors, searchIndex),
    searchIndex,
    replyTextBackfill,
    attachmentText: new AttachmentTextService(db, blobs, clock, log, {
      maxBytes: config.ATTACHMENT_TEXT_MAX_BYTES,
      timeoutMs: config.ATTACHMENT_TEXT_TIMEOUT,
      maxChars: config.ATTACHMENT_TEXT_MAX_CHARS,
      maxPages: 2_000,
      maxMemoryMb: config.ATTACHMENT_TEXT_MAX_MEMORY,
      concurrency: config.ATTACHMENT_TEXT_CONCURRENCY,
      zip: { maxInflatedBytes: config.ATTACHMENT_TEXT_MAX_INFLATED, maxRatio: 200, maxEntries: 5_000 },
    }),
    webhooks: new WebhookService(
      db,
      webhookCipher,
      clock,
      { allowPrivate: config.ALLOW_PRIVATE_NETWORK_TARGETS },
      { perMailbox: config.WEBHOOK_MAX_PER_MAILBOX, perDomain: config.WEBHOOK_MAX_PER_DOMAIN },
    ),
    eventSubscriptions: new EventSubscriptionService(db, events, webhookCipher, clock, {
      allowPrivate: config.ALLOW_PRIVATE_NETWORK_TARGETS,
    }),
    webhookCipher,
    storage: new StorageService(db),
  };
}
