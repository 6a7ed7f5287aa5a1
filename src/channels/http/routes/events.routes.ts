import { route, type RouteSpec } from '../route.js';
import { eventPageSchema, listEventsInputSchema } from '../../../core/state/events/event.schemas.js';

/**
 * The event log over HTTP: the same log, ids and payloads as the real-time connection, for
 * clients that poll or catch up without a socket. One core call.
 */
export const eventRoutes: RouteSpec[] = [
  route({
    method: 'GET',
    path: '/api/events',
    summary: 'Events of one mailbox after an event id, oldest first; resyncRequired when retention removed some.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: ['mailbox', 'domain'],
    query: listEventsInputSchema,
    response: eventPageSchema,
    status: 200,
    handler: ({ principal, query, services }) => services.events.list(principal, query),
  }),
];
