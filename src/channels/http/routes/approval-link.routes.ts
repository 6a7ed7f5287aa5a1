import { route, type RouteSpec } from '../route.js';
import { approvalResultSchema } from '../../../core/flows/policy/approval.schemas.js';
import {
  approvalLinkDecisionInputSchema,
  approvalLinkInputSchema,
  approvalLinkViewSchema,
} from '../../../core/flows/policy/approval-link.schemas.js';

/**
 * The approval page's routes (docs/api.md, "Approval links"): no bearer token, the mailed link's
 * credential is the body (never the path, which logs and traces record). POST for the read too,
 * for the same reason. Neither answer may be cached.
 */
export const approvalLinkRoutes: RouteSpec[] = [
  route({
    method: 'POST',
    path: '/api/approval-links/view',
    summary: 'The held message an approval link names, with why it was held and whether it is still undecided.',
    // No token, so no kind to serve: the authorization matrix only checks that a header is ignored.
    auth: 'none',
    tokenKinds: [],
    body: approvalLinkInputSchema,
    response: approvalLinkViewSchema,
    status: 200,
    noStore: true,
    handler: ({ body, services, remoteIp }) => services.approvalLinks.view(body, remoteIp),
  }),
  route({
    method: 'POST',
    path: '/api/approval-links/decision',
    summary: "Approve or reject the held message through its approval link (once; audited in the approver's name).",
    auth: 'none',
    tokenKinds: [],
    body: approvalLinkDecisionInputSchema,
    response: approvalResultSchema,
    status: 200,
    noStore: true,
    handler: ({ body, services, remoteIp }) => services.approvalLinks.decide(body, remoteIp),
  }),
];
