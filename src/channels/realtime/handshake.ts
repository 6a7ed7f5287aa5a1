import type { Socket } from 'socket.io';
import { z } from 'zod';
import { AppError } from '../../core/base/errors.js';
import { isUnexpected, toAppError } from '../../core/base/error-mapping.js';
import { parseInput } from '../../core/base/validation.js';
import type { Logger } from '../../core/base/logger.js';
import { errorPayload, type ErrorPayload } from '../shared/error-payload.js';
import type { ClientAddressOf } from '../shared/client-address.js';
import type { MailboxRef, Principal } from '../../core/access/principal.js';
import type { Services } from '../../core/services.js';
import { eventIdSchema } from '../../core/state/events/event.schemas.js';
import type { OriginPolicy } from '../shared/origin-policy.js';
import { bearerToken } from '../shared/bearer-token.js';

type Handshake = Socket['handshake'];

/** What a connection is bound to once the handshake passed (kept in socket.data). */
export interface Subscriber {
  principal: Principal;
  mailbox: MailboxRef;
  /** Replay starts after this id; null: live events from now on. */
  lastEventId: number | null;
  /** Gives back the token's connection slot (MAX_SOCKETS_PER_TOKEN) and replay slot; idempotent. */
  release: () => void;
  /** Gives back the token's replay slot (MAX_REPLAYS_PER_TOKEN) once the replay reached live; idempotent. */
  replayDone: () => void;
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
export async function authorizeHandshake(
  services: Services,
  origins: OriginPolicy,
  clientAddressOf: ClientAddressOf,
  h: Handshake,
): Promise<Subscriber> {
  if (!origins.allows(header(h, 'origin'), header(h, 'host'))) throw new AppError('ORIGIN_FORBIDDEN');
  for (const [key, value] of Object.entries(h.query ?? {})) {
    if (URL_TOKEN_KEYS.includes(key.toLowerCase()) || TOKEN_SHAPE.test(String(value)))
      throw new AppError('TOKEN_IN_URL');
  }
  const auth = (h.auth ?? {}) as Record<string, unknown>;
  const token =
    typeof auth.token === 'string' && auth.token !== '' ? auth.token : bearerToken(header(h, 'authorization'));
  const principal = await services.tokenAuth.authenticate(
    token,
    clientAddressOf(h.address, h.headers['x-forwarded-for']),
  );
  const input = parseInput(authSchema, { mailboxAddress: auth.mailboxAddress, lastEventId: auth.lastEventId }, 'auth');
  const mailbox = await services.events.openSubscription(principal, input.mailboxAddress);
  const lastEventId = input.lastEventId ?? null;
  const releaseSocket = services.caps.sockets.acquire(principal.tokenId);
  let replayDone = () => undefined as void;
  if (lastEventId !== null) {
    try {
      replayDone = services.caps.replays.acquire(principal.tokenId);
    } catch (err) {
      releaseSocket();
      throw err;
    }
  }
  const release = () => {
    replayDone();
    releaseSocket();
  };
  return { principal, mailbox, lastEventId, release, replayDone };
}

/** A Socket.IO error as a client sees it: the message, and the catalog payload as `data`. */
export type SocketError = Error & { data: ErrorPayload };

/**
 * The one place Socket.IO renders a catalog error: `connect_error` (a refused handshake) and
 * `subscription.closed` (a server-side close) both carry `{ code, errorCode, errMsg }`, with the
 * HTTP-equivalent code, plus `retryAfterSeconds` on a 429 (what HTTP sends as Retry-After).
 * Anything thrown goes through the core's mapping first: an outage is 503, a bug 500 (logged).
 */
export function socketError(err: unknown, log: Logger, where: string): SocketError {
  const e = toAppError(err);
  if (isUnexpected(e)) log.error('realtime.error', { where, err });
  return Object.assign(new Error(e.message), { data: errorPayload(e) });
}

function header(h: Handshake, name: string): string | undefined {
  const value = h.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
