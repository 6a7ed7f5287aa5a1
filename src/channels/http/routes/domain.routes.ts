import { route, type RouteSpec } from '../route.js';
import {
  createMailboxInputSchema,
  listMailboxesQuerySchema,
  mailboxCreatedSchema,
  mailboxPageSchema,
  passwordSetSchema,
  setPasswordInputSchema,
} from '../../../core/state/mailboxes/mailbox.schemas.js';
import { domainMailboxParamsSchema, idParam } from '../../../core/access/token.schemas.js';
import { tokenGovernanceRoutes } from './tokens.routes.js';

const common = { auth: 'bearer', scope: 'DomainManage', tokenKinds: ['domain'] } as const;

/**
 * Domain governance (spec): a domain token with DomainManage manages the mailboxes, passwords
 * and mailbox tokens of its own domain. A mailbox id of another domain is a 404, like an
 * unknown one.
 */
export const domainRoutes: RouteSpec[] = [
  route({
    ...common,
    method: 'GET',
    path: '/api/domain/mailboxes',
    summary: "List the domain's mailboxes, paged like messages.",
    query: listMailboxesQuerySchema,
    response: mailboxPageSchema,
    status: 200,
    handler: ({ principal, query, services }) => services.mailboxes.list(principal, query),
  }),
  route({
    ...common,
    method: 'POST',
    path: '/api/domain/mailboxes',
    summary: 'Create a mailbox (same as POST /api/mailboxes).',
    body: createMailboxInputSchema,
    response: mailboxCreatedSchema,
    status: 201,
    noStore: true,
    handler: ({ principal, body, services }) => services.mailboxes.create(principal, body),
  }),
  route({
    ...common,
    method: 'POST',
    path: '/api/domain/mailboxes/:mailboxId/password',
    summary: "Set a mailbox's login password.",
    params: domainMailboxParamsSchema,
    body: setPasswordInputSchema,
    response: passwordSetSchema,
    status: 200,
    handler: ({ principal, params, body, services }) =>
      services.mailboxes.setPassword(principal, params.mailboxId, body.password),
  }),
  ...tokenGovernanceRoutes({
    base: '/api/domain/mailboxes/:mailboxId/access-tokens',
    ...common,
    ownerParams: { mailboxId: idParam },
    who: "a domain mailbox's",
    govern: ({ principal, params, services }) => services.tokens.domainMailbox(principal, params.mailboxId!),
  }),
];
