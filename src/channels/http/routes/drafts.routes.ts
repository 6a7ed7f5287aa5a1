import { z } from 'zod';
import { ChangeMarked, route, targetMailboxAddress } from '../route.js';
import { heldMarks } from '../etag.js';
import {
  createDraftInputSchema,
  draftDeletedSchema,
  draftIdParamsSchema,
  draftMailboxQuerySchema,
  draftPageSchema,
  draftSchema,
  listDraftsInputSchema,
  updateDraftBodySchema,
} from '../../../core/state/drafts/draft.schemas.js';
import { sendAcceptedSchema } from '../../../core/flows/sending/send.schemas.js';

const both = ['mailbox', 'domain'] as const;
/** A write naming the draft's mailbox (a domain token may), in the body or the query. */
const mailboxOnlyBody = z.object({ mailboxAddress: draftMailboxQuerySchema.shape.mailboxAddress }).strict();

/** Drafts (docs/workflow.md, "Drafts"): reading needs MailboxRead, every write MailboxSend. */
export const draftRoutes = [
  route({
    method: 'POST',
    path: '/api/drafts',
    summary: 'Save a draft of a message (201); it may be incomplete until it is sent.',
    auth: 'bearer',
    scope: 'MailboxSend',
    tokenKinds: both,
    body: createDraftInputSchema,
    response: draftSchema,
    status: 201,
    handler: ({ principal, body, services }) => services.drafts.create(principal, body),
  }),
  route({
    method: 'GET',
    path: '/api/drafts',
    summary: 'List the drafts of a mailbox, newest first, keyset-paged like messages.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    query: listDraftsInputSchema,
    response: draftPageSchema,
    status: 200,
    changeMark: 'mailbox',
    handler: async ({ principal, query, services, ctx }) => {
      const holds = heldMarks(ctx.get('if-none-match'));
      const { value, mark } = await services.drafts.listUnlessUnchanged(principal, query, ctx.url, holds);
      return new ChangeMarked(value, mark);
    },
  }),
  route({
    method: 'GET',
    path: '/api/drafts/:draftId',
    summary: 'One draft with its bodies and the uploads it holds.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    params: draftIdParamsSchema,
    query: draftMailboxQuerySchema,
    response: draftSchema,
    status: 200,
    handler: ({ principal, params, query, services }) => services.drafts.get(principal, { ...params, ...query }),
  }),
  route({
    method: 'PATCH',
    path: '/api/drafts/:draftId',
    summary: 'Change a draft: absent fields are kept, null clears one, a list replaces the list.',
    auth: 'bearer',
    scope: 'MailboxSend',
    tokenKinds: both,
    params: draftIdParamsSchema,
    query: draftMailboxQuerySchema,
    body: updateDraftBodySchema,
    response: draftSchema,
    status: 200,
    handler: ({ principal, params, query, body, services }) =>
      services.drafts.update(principal, params.draftId, {
        ...body,
        mailboxAddress: targetMailboxAddress(query, body),
      }),
  }),
  route({
    method: 'DELETE',
    path: '/api/drafts/:draftId',
    summary: 'Delete a draft; the uploads it held are released (a second delete is 404).',
    auth: 'bearer',
    scope: 'MailboxSend',
    tokenKinds: both,
    params: draftIdParamsSchema,
    query: draftMailboxQuerySchema,
    body: mailboxOnlyBody.optional(),
    response: draftDeletedSchema,
    status: 200,
    handler: ({ principal, params, query, body, services }) =>
      services.drafts.delete(principal, { draftId: params.draftId, mailboxAddress: targetMailboxAddress(query, body) }),
  }),
  route({
    method: 'POST',
    path: '/api/drafts/:draftId/send',
    summary:
      'Send a draft through the send path (202 queued, scheduled or pending_approval); the draft is removed when the send is accepted. Honours Idempotency-Key.',
    idempotent: true,
    auth: 'bearer',
    scope: 'MailboxSend',
    tokenKinds: both,
    params: draftIdParamsSchema,
    query: draftMailboxQuerySchema,
    body: mailboxOnlyBody.optional(),
    response: sendAcceptedSchema,
    status: 202,
    handler: ({ principal, params, query, body, services, ctx }) =>
      services.draftSending.send(
        principal,
        params.draftId,
        { mailboxAddress: targetMailboxAddress(query, body) },
        { channel: 'http', idempotencyKey: ctx.get('idempotency-key') || undefined },
      ),
  }),
];
