import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/server';
import type { Principal } from '../../../core/access/principal.js';
import { AppError } from '../../../core/base/errors.js';
import { decodeFeedCursor, encodeFeedCursor, EventFeed } from '../../../core/state/events/event-feed.js';
import type { Services } from '../../../core/services.js';
import { parseArguments } from '../errors.js';
import type { EventType } from '../../../types/mailbox-event.js';
import { eventArgumentsSchema, eventDefinitions, isEventType, type DeliveryMode } from './catalog.js';
import { eventError } from './errors.js';
import { toOccurrence } from '../../../core/state/events/event-occurrence.js';
import { holdStream, type ResolvedSubscription } from './stream.js';

/** Every event type is offered in all three modes. */
export const DELIVERY: DeliveryMode[] = ['poll', 'push', 'webhook'];

const POLL_DEFAULT = 100;
const POLL_MAX = 500;
/** The poll interval suggested when nothing is waiting. */
const NEXT_POLL_MS = 5_000;

const subscriptionParams = z.looseObject({
  name: z.string().max(100),
  arguments: z.unknown().optional(),
  cursor: z.string().max(200).nullable().optional(),
  maxAgeMs: z.number().int().min(0).nullable().optional(),
});
const webhookDelivery = z.looseObject({ mode: z.literal('webhook'), url: z.string().max(2048) });
const subscribeParams = subscriptionParams.extend({
  delivery: webhookDelivery.extend({ secret: z.string().max(200) }),
  ttlMs: z.number().int().positive().nullable().optional(),
});
const unsubscribeParams = z.looseObject({
  name: z.string().max(100),
  arguments: z.unknown().optional(),
  delivery: webhookDelivery,
});
const pollParams = subscriptionParams.extend({ maxEvents: z.number().int().min(1).max(POLL_MAX).optional() });

/** The event type and the arguments' mailbox, checked as everywhere (unknown type: 404; bad arguments: 400). */
function eventTarget(params: { name: string; arguments?: unknown }): {
  type: EventType;
  mailboxAddress: string | undefined;
} {
  if (!isEventType(params.name)) throw new AppError('NOT_FOUND', `name: no event type ${params.name}`);
  return {
    type: params.name,
    mailboxAddress: parseArguments(eventArgumentsSchema, params.arguments ?? {}).mailboxAddress,
  };
}

export async function resolveSubscription(
  services: Services,
  principal: Principal,
  params: z.infer<typeof subscriptionParams>,
): Promise<ResolvedSubscription> {
  const { type, mailboxAddress } = eventTarget(params);
  const mailbox = await services.events.openSubscription(principal, mailboxAddress);
  const feed = new EventFeed(services.events);
  const from = params.cursor ? decodeFeedCursor(params.cursor, mailbox.id) : await feed.head(mailbox);
  return { type, types: new Set([type]), from, tokenId: principal.tokenId };
}

/** events/list, events/poll and events/stream on a 2026-07-28 server, for one caller. */
export function registerEventHandlers(mcp: McpServer, services: Services, principal: Principal): void {
  const log = services.log;
  const definitions = eventDefinitions(DELIVERY);
  mcp.server.setRequestHandler(
    'events/list',
    { params: z.looseObject({ cursor: z.string().optional() }).optional() },
    () => ({ events: definitions }),
  );

  mcp.server.setRequestHandler('events/poll', { params: pollParams }, async (params) => {
    try {
      const sub = await resolveSubscription(services, principal, params);
      const feed = new EventFeed(services.events);
      if (!params.cursor) {
        // A null cursor starts from now: nothing yet, and the position to poll from.
        return {
          events: [],
          cursor: encodeFeedCursor(sub.from),
          truncated: false,
          hasMore: false,
          nextPollMs: NEXT_POLL_MS,
        };
      }
      const page = await feed.read(sub.from, sub.types, params.maxEvents ?? POLL_DEFAULT);
      return {
        events: page.events.map(toOccurrence),
        cursor: encodeFeedCursor(page.next),
        truncated: page.truncated,
        hasMore: page.hasMore,
        nextPollMs: page.hasMore ? 0 : NEXT_POLL_MS,
      };
    } catch (err) {
      throw eventError(err, log, 'events/poll');
    }
  });

  mcp.server.setRequestHandler('events/subscribe', { params: subscribeParams }, async (params) => {
    try {
      const { type, mailboxAddress } = eventTarget(params);
      return {
        ...(await services.eventSubscriptions.subscribe(principal, {
          type,
          mailboxAddress,
          url: params.delivery.url,
          secret: params.delivery.secret,
          cursor: params.cursor ?? null,
          ttlMs: params.ttlMs,
        })),
      };
    } catch (err) {
      throw eventError(err, log, 'events/subscribe');
    }
  });

  mcp.server.setRequestHandler('events/unsubscribe', { params: unsubscribeParams }, async (params) => {
    try {
      const { type, mailboxAddress } = eventTarget(params);
      await services.eventSubscriptions.unsubscribe(principal, { type, mailboxAddress, url: params.delivery.url });
      return {};
    } catch (err) {
      throw eventError(err, log, 'events/unsubscribe');
    }
  });

  mcp.server.setRequestHandler('events/stream', { params: subscriptionParams }, async (params, ctx) => {
    let sub: ResolvedSubscription;
    let release: () => void;
    try {
      sub = await resolveSubscription(services, principal, params);
      // A held stream is a connection like a socket: one token holds a bounded number per process.
      release = services.caps.eventStreams.acquire(principal.tokenId);
    } catch (err) {
      throw eventError(err, log, 'events/stream');
    }
    try {
      await holdStream(services, sub, {
        signal: ctx.mcpReq.signal,
        subscriptionId: ctx.mcpReq.id,
        notify: (method, body) => ctx.mcpReq.notify({ method, params: body }),
      });
    } finally {
      release();
    }
    return { _meta: {} };
  });
}
