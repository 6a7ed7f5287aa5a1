import type { ParameterizedContext } from 'koa';
import { route, type RouteSpec } from '../route.js';
import { waitInputSchema, waitResultSchema } from '../../../core/state/messages/wait.schemas.js';
import {
  verificationCodeInputSchema,
  verificationCodeResultSchema,
} from '../../../core/state/messages/verification-code.schemas.js';

/** Aborts when the client goes away before the answer, so an abandoned long-poll stops at once. */
function clientGone(ctx: ParameterizedContext): AbortSignal {
  const controller = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) controller.abort();
  });
  return controller.signal;
}

/**
 * The long-poll for the next message (same core call as MCP wait_for_message). Listed before
 * the message routes in routes/index.ts: `/api/messages/:messageId` would otherwise take
 * `wait` as a message id (koa-router runs matching routes in registration order).
 */
export const waitRoutes: RouteSpec[] = [
  route({
    method: 'GET',
    path: '/api/messages/wait',
    summary:
      'Wait up to timeoutMs (default 30 s, max 55 s) for the next message matching from/subjectContains/direction after sinceEventId.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: ['mailbox', 'domain'],
    query: waitInputSchema,
    response: waitResultSchema,
    status: 200,
    handler: ({ principal, query, services, ctx }) =>
      services.waits.wait(principal, query, { signal: clientGone(ctx) }),
  }),
  route({
    method: 'GET',
    path: '/api/messages/verification-code',
    summary:
      'The one-time code of the newest received message that has one since sinceTs (default 10 minutes ago), ' +
      'waiting up to timeoutMs for it (same core call as MCP get_verification_code).',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: ['mailbox', 'domain'],
    query: verificationCodeInputSchema,
    response: verificationCodeResultSchema,
    status: 200,
    handler: ({ principal, query, services, ctx }) =>
      services.waits.waitForCode(principal, query, { signal: clientGone(ctx) }),
  }),
];
