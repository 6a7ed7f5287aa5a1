import type { RouteSpec } from '../route.js';
import { mailboxRoutes } from './mailboxes.routes.js';
import { messageRoutes } from './messages.routes.js';
import { sendRoutes } from './send.routes.js';
import { tokenRoutes } from './tokens.routes.js';
import { domainRoutes } from './domain.routes.js';
import { loginRoutes } from './login.routes.js';
import { downloadRoutes } from './download.routes.js';
import { dkimRoutes } from './dkim.routes.js';
import { waitRoutes } from './wait.routes.js';
import { searchRoutes } from './search.routes.js';
import { domainWebhookRoutes, mailboxWebhookRoutes } from './webhooks.routes.js';
import { eventRoutes } from './events.routes.js';
import { policyRoutes } from './policy.routes.js';
import { storageRoutes } from './storage.routes.js';
import { threadRoutes } from './threads.routes.js';
import { approvalLinkRoutes } from './approval-link.routes.js';
import { draftRoutes } from './drafts.routes.js';

/** Every /api route. The authorization-matrix and OpenAPI tests iterate this list. */
export const allRoutes: readonly RouteSpec[] = [
  ...mailboxRoutes,
  // Before messageRoutes: GET /api/messages/:messageId would otherwise capture /api/messages/wait.
  ...waitRoutes,
  ...searchRoutes,
  ...threadRoutes,
  ...messageRoutes,
  ...sendRoutes,
  ...draftRoutes,
  ...tokenRoutes,
  ...domainRoutes,
  ...loginRoutes,
  ...downloadRoutes,
  ...dkimRoutes,
  ...eventRoutes,
  ...policyRoutes,
  ...approvalLinkRoutes,
  ...storageRoutes,
  ...domainWebhookRoutes,
  ...mailboxWebhookRoutes,
];
