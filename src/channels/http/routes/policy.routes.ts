import { z } from 'zod';
import { route, type RouteSpec } from '../route.js';
import { mailboxPolicyInputSchema, mailboxPolicyViewSchema } from '../../../core/access/policy.schemas.js';
import { approvalDecisionInputSchema, approvalResultSchema } from '../../../core/flows/policy/approval.schemas.js';
import { auditPageSchema, listAuditInputSchema } from '../../../core/state/audit/audit.schemas.js';
import { domainMailboxParamsSchema } from '../../../core/access/token.schemas.js';
import { messageIdParamsSchema } from '../../../core/state/messages/message.schemas.js';

const both = ['mailbox', 'domain'] as const;
const domainOnly = { auth: 'bearer', scope: 'DomainManage', tokenKinds: ['domain'] } as const;
const mailboxAddressQuery = z.object({ mailboxAddress: z.string().trim().max(320).optional() });

/** Outbound policy, approval gate and audit trail (docs/api.md, "Outbound policy"). */
export const policyRoutes: RouteSpec[] = [
  route({
    method: 'GET',
    path: '/api/mailbox/policy',
    summary: "The calling mailbox's outbound policy (a domain token names the mailbox).",
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    query: mailboxAddressQuery,
    response: mailboxPolicyViewSchema,
    status: 200,
    handler: ({ principal, query, services }) => services.mailboxPolicies.forMailbox(principal, query.mailboxAddress),
  }),
  route({
    ...domainOnly,
    method: 'GET',
    path: '/api/domain/mailboxes/:mailboxId/policy',
    summary: "A domain mailbox's outbound policy.",
    params: domainMailboxParamsSchema,
    response: mailboxPolicyViewSchema,
    status: 200,
    handler: ({ principal, params, services }) =>
      services.mailboxPolicies.forDomainMailbox(principal, params.mailboxId),
  }),
  route({
    ...domainOnly,
    method: 'PUT',
    path: '/api/domain/mailboxes/:mailboxId/policy',
    summary: "Replace a domain mailbox's outbound policy (omitted fields take their defaults).",
    params: domainMailboxParamsSchema,
    body: mailboxPolicyInputSchema,
    response: mailboxPolicyViewSchema,
    status: 200,
    handler: ({ principal, params, body, services }) => services.mailboxPolicies.set(principal, params.mailboxId, body),
  }),
  ...(['approve', 'reject'] as const).map((verb) =>
    route({
      method: 'POST',
      path: `/api/messages/:messageId/${verb}`,
      target: 'message',
      summary: `${verb === 'approve' ? 'Approve' : 'Reject'} a held message (idempotent; the first decision wins).`,
      auth: 'bearer',
      scope: 'MailboxApprove',
      domainScope: 'DomainManage',
      tokenKinds: both,
      params: messageIdParamsSchema,
      body: approvalDecisionInputSchema.optional(),
      response: approvalResultSchema,
      status: 200,
      handler: ({ principal, params, body, services }) =>
        services.approvals.decide(
          principal,
          params.messageId,
          verb === 'approve' ? 'approved' : 'rejected',
          'http',
          body?.reason,
        ),
    }),
  ),
  route({
    method: 'GET',
    path: '/api/mailbox/audit',
    summary: 'Send attempts and decisions of the mailbox, newest first, keyset-paged.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    query: listAuditInputSchema,
    response: auditPageSchema,
    status: 200,
    handler: ({ principal, query, services }) => services.audit.listMailbox(principal, query),
  }),
  route({
    ...domainOnly,
    method: 'GET',
    path: '/api/domain/audit',
    summary: 'Send attempts and decisions of every mailbox of the domain, newest first, keyset-paged.',
    query: listAuditInputSchema,
    response: auditPageSchema,
    status: 200,
    handler: ({ principal, query, services }) => services.audit.listDomain(principal, query),
  }),
];
