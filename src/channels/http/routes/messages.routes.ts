import { ChangeMarked, route, targetMailboxAddress, type RouteSpec } from '../route.js';
import { heldMarks } from '../etag.js';
import { releaseResultSchema } from '../../../core/flows/inbound/release.schemas.js';
import {
  bulkDeleteInputSchema,
  bulkDeleteResultSchema,
  bulkReadStateInputSchema,
  bulkReadStateResultSchema,
  deleteResultSchema,
  listMessagesInputSchema,
  mailboxAddressQuerySchema,
  messageDetailSchema,
  messageIdParamsSchema,
  messagePageSchema,
  readStateBodySchema,
  readStateResultSchema,
  threadIdParamsSchema,
  threadViewSchema,
} from '../../../core/state/messages/message.schemas.js';

const both = ['mailbox', 'domain'] as const;

/** The read side of messages (spec, Messages). Each handler is one core call. */
export const messageRoutes: RouteSpec[] = [
  route({
    method: 'GET',
    path: '/api/messages',
    summary: 'List messages, newest first, keyset-paged.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    query: listMessagesInputSchema,
    response: messagePageSchema,
    status: 200,
    changeMark: 'mailbox',
    handler: async ({ principal, query, services, ctx }) => {
      const holds = heldMarks(ctx.get('if-none-match'));
      const { value, mark } = await services.messages.listUnlessUnchanged(principal, query, ctx.url, holds);
      return new ChangeMarked(value, mark);
    },
  }),
  route({
    method: 'POST',
    path: '/api/messages/bulk-read-state',
    summary: 'Mark up to 1000 messages read or unread.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    body: bulkReadStateInputSchema,
    response: bulkReadStateResultSchema,
    status: 200,
    handler: ({ principal, body, services }) => services.messages.bulkSetReadState(principal, body),
  }),
  route({
    method: 'POST',
    path: '/api/messages/bulk-delete',
    summary: 'Soft-delete up to 1000 messages.',
    auth: 'bearer',
    scope: 'MailboxDelete',
    tokenKinds: both,
    body: bulkDeleteInputSchema,
    response: bulkDeleteResultSchema,
    status: 200,
    handler: ({ principal, body, services }) => services.messages.bulkDelete(principal, body),
  }),
  route({
    method: 'GET',
    path: '/api/messages/:messageId',
    summary: 'One message with bodies, attachments and deliveries.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    params: messageIdParamsSchema,
    query: mailboxAddressQuerySchema,
    response: messageDetailSchema,
    status: 200,
    changeMark: 'target',
    // 'reviewer': held mail is shown here to a caller that may release it (docs/screening.md).
    handler: ({ principal, params, query, services }) =>
      services.messages.get(principal, { ...params, ...query }, 'reviewer'),
  }),
  route({
    method: 'POST',
    path: '/api/messages/:messageId/release',
    summary: 'Release inbound mail held by screening into lists, search, threads and waits.',
    auth: 'bearer',
    scope: 'MailboxApprove',
    tokenKinds: both,
    params: messageIdParamsSchema,
    target: 'message',
    response: releaseResultSchema,
    status: 200,
    handler: ({ principal, params, query, body, services }) =>
      services.screeningRelease.release(
        principal,
        { messageId: params.messageId, mailboxAddress: targetMailboxAddress(query, body) },
        'http',
      ),
  }),
  route({
    method: 'PUT',
    path: '/api/messages/:messageId/read-state',
    target: 'message',
    summary: 'Mark one message read or unread.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    params: messageIdParamsSchema,
    body: readStateBodySchema,
    response: readStateResultSchema,
    status: 200,
    handler: ({ principal, params, body, services }) =>
      services.messages.setReadState(principal, { ...params, ...body }),
  }),
  route({
    method: 'DELETE',
    path: '/api/messages/:messageId',
    target: 'message',
    summary: 'Soft-delete one message.',
    auth: 'bearer',
    scope: 'MailboxDelete',
    tokenKinds: both,
    params: messageIdParamsSchema,
    query: mailboxAddressQuerySchema,
    response: deleteResultSchema,
    status: 200,
    handler: ({ principal, params, query, services }) => services.messages.delete(principal, { ...params, ...query }),
  }),
  route({
    method: 'GET',
    path: '/api/threads/:threadId',
    summary: 'One thread with its live messages, oldest first.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    params: threadIdParamsSchema,
    query: mailboxAddressQuerySchema,
    response: threadViewSchema,
    status: 200,
    changeMark: 'target',
    handler: ({ principal, params, query, services }) =>
      services.messages.getThread(principal, { ...params, ...query }),
  }),
];
