import { route } from '../route.js';
import { mailboxAddressQuerySchema, threadIdParamsSchema } from '../../../core/state/messages/message.schemas.js';
import {
  listThreadsInputSchema,
  setThreadStateBodySchema,
  threadPageSchema,
  threadSummarySchema,
} from '../../../core/state/messages/thread-state.schemas.js';

const both = ['mailbox', 'domain'] as const;

/** Thread workflow state (docs/workflow.md, "Thread state"). */
export const threadRoutes = [
  route({
    method: 'GET',
    path: '/api/threads',
    summary: 'Threads of the mailbox, most recent activity first, optionally by state; keyset-paged.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    query: listThreadsInputSchema,
    response: threadPageSchema,
    status: 200,
    handler: ({ principal, query, services }) => services.threads.list(principal, query),
  }),
  route({
    method: 'PUT',
    path: '/api/threads/:threadId/state',
    summary: "Set a thread's workflow state and follow-up time (MailboxSend).",
    auth: 'bearer',
    scope: 'MailboxSend',
    tokenKinds: both,
    params: threadIdParamsSchema,
    query: mailboxAddressQuerySchema,
    body: setThreadStateBodySchema,
    response: threadSummarySchema,
    status: 200,
    handler: ({ principal, params, query, body, services }) =>
      services.threads.setState(principal, params.threadId, {
        ...body,
        mailboxAddress: body.mailboxAddress ?? query.mailboxAddress,
      }),
  }),
];
