import { z } from 'zod';
import { route, type RouteSpec } from '../route.js';
import { domainMailboxParamsSchema } from '../../../core/access/token.schemas.js';
import {
  domainStorageSchema,
  mailboxStorageSchema,
  setDomainStorageInputSchema,
  setMailboxStorageInputSchema,
} from '../../../core/state/quota/storage.schemas.js';

const domainOnly = { auth: 'bearer', scope: 'DomainManage', tokenKinds: ['domain'] } as const;

/** Storage quotas (docs/api.md, "Storage quota"). */
export const storageRoutes: RouteSpec[] = [
  route({
    method: 'GET',
    path: '/api/mailbox/storage',
    summary: "The calling mailbox's storage use and quota (a domain token names the mailbox).",
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: ['mailbox', 'domain'],
    query: z.object({ mailboxAddress: z.string().trim().max(320).optional() }),
    response: mailboxStorageSchema,
    status: 200,
    handler: ({ principal, query, services }) => services.storage.forMailbox(principal, query.mailboxAddress),
  }),
  route({
    ...domainOnly,
    method: 'GET',
    path: '/api/domain/mailboxes/:mailboxId/storage',
    summary: "A domain mailbox's storage use and quota.",
    params: domainMailboxParamsSchema,
    response: mailboxStorageSchema,
    status: 200,
    handler: ({ principal, params, services }) => services.storage.forDomainMailbox(principal, params.mailboxId),
  }),
  route({
    ...domainOnly,
    method: 'PUT',
    path: '/api/domain/mailboxes/:mailboxId/storage',
    summary: "Set a domain mailbox's storage quota in bytes (null: the domain default).",
    params: domainMailboxParamsSchema,
    body: setMailboxStorageInputSchema,
    response: mailboxStorageSchema,
    status: 200,
    handler: ({ principal, params, body, services }) => services.storage.setMailbox(principal, params.mailboxId, body),
  }),
  route({
    ...domainOnly,
    method: 'GET',
    path: '/api/domain/storage',
    summary: "The domain's default mailbox storage quota and total use.",
    response: domainStorageSchema,
    status: 200,
    handler: ({ principal, services }) => services.storage.forDomain(principal),
  }),
  route({
    ...domainOnly,
    method: 'PUT',
    path: '/api/domain/storage',
    summary: 'Set the default storage quota (bytes) of mailboxes that set none (null: unlimited).',
    body: setDomainStorageInputSchema,
    response: domainStorageSchema,
    status: 200,
    handler: ({ principal, body, services }) => services.storage.setDomain(principal, body),
  }),
];
