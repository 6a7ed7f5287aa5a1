import type { Socket } from 'socket.io';
import { z } from 'zod';
import { AppError, isAppError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { MailboxRef, Principal } from '../../core/auth/principal.js';
import type { Services } from '../../core/services.js';
import { eventIdSchema } from '../../core/events/event.schemas.js';
import type { OriginPolicy } from '../http/origin-policy.js';
import { bearerToken } from '../http/app.js';

type Handshake = Socket['handshake'];

/** What a connection is bound to once the handshake passed (kept in socket.data). */
export interface Subscriber {
  principal: Principal;
  mailbox: MailboxRef;
  /** Replay starts after this id; null: live events from now on. */
  lastEventId: number | null;
}

const authSchema = z.object({
  mailboxAddress: z.string().trim().max(320).optional().nullable(),
  lastEventId: eventIdSchema.optional().nullable(),
});

/** Query keys a client might put a token under; any value shaped like one of our tokens counts too. */
const URL_TOKEN_KEYS = ['token', 'access_token', 'accesstoken', 'authorization', 'bearer', 'auth'];
const TOKEN_SHAPE = /mbx[md]_/i;

/**
 * The handshake, in the order HTTP checks a request (docs/api.md): Origin, then a token in the
 * URL (refused even when a valid one is also in the header: the URL has already leaked it into
 * logs), then authentication (401), input shape (400), scope and mailbox (403/400/404) in the core.
 */
export async function authorizeHandshake(services: Services, origins: OriginPolicy, h: Handshake): Promise<Subscriber> {
  if (!origins.allows(header(h, 'origin'), header(h, 'host'))) throw new AppError('ORIGIN_FORBIDDEN');
  for (const [key, value] of Object.entries(h.query ?? {})) {
    if (URL_TOKEN_KEYS.includes(key.toLowerCase()) || TOKEN_SHAPE.test(String(value))) throw new AppError('TOKEN_IN_URL');
  }
  const auth = (h.auth ?? {}) as Record<string, unknown>;
  const token = typeof auth.token === 'string' && auth.token !== '' ? auth.token : bearerToken(header(h, 'authorization'));
  const principal = await services.tokens.authenticate(token, clientAddress(services, h));
  const parsed = authSchema.safeParse({ mailboxAddress: auth.mailboxAddress, lastEventId: auth.lastEventId });
  if (!parsed.success) {
    const field = String(parsed.error.issues[0]?.path[0] ?? 'auth');
    throw new AppError(field === 'mailboxAddress' ? 'MAILBOX_ADDRESS_INVALID' : 'VALIDATION_FAILED', `${field}: ${parsed.error.issues[0]?.message}`);
  }
  const mailbox = await services.events.openSubscription(principal, parsed.data.mailboxAddress);
  return { principal, mailbox, lastEventId: parsed.data.lastEventId ?? null };
}

/**
 * The `connect_error` a client sees: `data` is `{ code, errMsg }` with the HTTP-equivalent code,
 * plus `retryAfterSeconds` on a 429 (what HTTP sends as Retry-After).
 */
export function refusal(err: unknown, log: Logger): Error & { data: { code: number; errMsg: string; retryAfterSeconds?: number } } {
  const known = isAppError(err) ? err : new AppError('INTERNAL');
  if (!isAppError(err)) log.error('realtime.handshake_failed', { err });
  const out = new Error(known.message) as Error & { data: { code: number; errMsg: string; retryAfterSeconds?: number } };
  out.data = { code: known.status, errMsg: known.message, ...(known.retryAfterSeconds !== undefined ? { retryAfterSeconds: known.retryAfterSeconds } : {}) };
  return out;
}

/** The client address the failure budget counts: as Koa's ctx.ip, X-Forwarded-For's first entry with TRUST_PROXY. */
function clientAddress(services: Services, h: Handshake): string | null {
  if (services.config.TRUST_PROXY) {
    const forwarded = header(h, 'x-forwarded-for')?.split(',')[0]?.trim();
    if (forwarded) return forwarded;
  }
  return h.address || null;
}

function header(h: Handshake, name: string): string | undefined {
  const value = h.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
