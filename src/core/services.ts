import type { Redis } from 'ioredis';
import type { Config } from '../config/config.js';
import type { Database } from '../storage/database.js';
import type { BlobStore } from '../storage/blobs/blob-store.js';
import type { Logger } from './logger.js';
import type { Clock } from './time.js';
import { TokenCipher } from './tokens/token-cipher.js';
import { TokenService } from './tokens/token.service.js';
import { UsageRecorder } from './tokens/usage-recorder.js';
import { CursorCodec } from './paging/cursor.js';
import { MailboxService } from './mailboxes/mailbox.service.js';
import { LoginService } from './auth/login.service.js';
import { AuthThrottle } from './auth/auth-throttle.js';
import { RateLimits } from './ratelimit/rate-limits.js';
import { deriveKey } from './keys/server-key.js';
import type { EventBus } from './events/event-bus.js';
import { MessageService } from './messages/message.service.js';
import { SendService } from './delivery/send.service.js';
import { AttachmentService } from './attachments/attachment.service.js';
import { InboundStore } from './delivery/inbound-store.js';
import { createMailTransport, type MailTransport } from './delivery/mail-transport.js';
import { WaitService } from './messages/wait.service.js';
import { EventService } from './events/event.service.js';

/** Everything a channel may call. Built once by the composition root. */
export interface Services {
  config: Readonly<Config>;
  log: Logger;
  clock: Clock;
  db: Database;
  blobs: BlobStore;
  bus: EventBus;
  redis: Redis | null;
  cipher: TokenCipher;
  cursors: CursorCodec;
  usage: UsageRecorder;
  tokens: TokenService;
  mailboxes: MailboxService;
  login: LoginService;
  limits: RateLimits;
  messages: MessageService;
  sending: SendService;
  attachments: AttachmentService;
  inbound: InboundStore;
  /** SMTP submission and inbound use cases, DKIM keys and external delivery. */
  transport: MailTransport;
  events: EventService;
  /** Long-poll for the next message (HTTP /api/messages/wait, MCP wait_for_message). */
  waits: WaitService;
}

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
  const { config, log, clock, db, blobs, bus, redis, serverKey } = deps;
  const cipher = new TokenCipher(deriveKey(serverKey, 'token-cipher'));
  const cursors = new CursorCodec(deriveKey(serverKey, 'cursor'));
  const usage = new UsageRecorder(db);
  const throttle = new AuthThrottle(redis, config.AUTH_FAILURES_PER_15M, log, config.AUTH_CACHE_TTL);
  const tokens = new TokenService(db, cipher, clock, usage, log, { revealWindowMs: config.TOKEN_REVEAL_WINDOW, defaultTtlMs: config.TOKEN_DEFAULT_TTL, authCacheTtlMs: config.AUTH_CACHE_TTL, throttle });
  const limits = new RateLimits(redis, { sendPerMinute: config.SEND_RATE_LIMIT_PER_MINUTE, loginFailuresPer15m: config.LOGIN_FAILURES_PER_15M });
  const mailboxes = new MailboxService(db, tokens, cursors, clock, { bootstrapTtlMs: config.BOOTSTRAP_TOKEN_TTL });
  const login = new LoginService(db, tokens, cipher, limits, clock, log, { defaultTtlMs: config.TOKEN_DEFAULT_TTL });
  const messages = new MessageService(db, bus, cursors, clock);
  const inbound = new InboundStore(db, bus, clock);
  const attachments = new AttachmentService(db, blobs, clock, { maxBytes: config.MAX_ATTACHMENT_BYTES });
  const sending = new SendService(db, bus, limits, clock, log, { maxRecipients: config.MAX_RECIPIENTS });
  const transport = createMailTransport({ config, log, clock, db, blobs, bus, redis, cipher, tokens, sending, inbound });
  const events = new EventService(db, clock, { retentionMs: config.EVENT_RETENTION, maxPerMailbox: config.EVENT_RETENTION_MAX_PER_MAILBOX });
  const waits = new WaitService(db, bus);
  return { config, log, clock, db, blobs, bus, redis, cipher, cursors, usage, tokens, mailboxes, login, limits, messages, sending, attachments, inbound, events, waits, transport };
}
