import { route, type RouteSpec } from '../route.js';
import {
  createWebhookInputSchema,
  createdWebhookSchema,
  webhookDeletedSchema,
  webhookIdParamsSchema,
  webhookListSchema,
} from '../../../core/flows/webhooks/webhook.schemas.js';

/** Webhook registrations (docs/contract.md, Webhooks): the same three routes for a domain and for a mailbox. */
function webhookRoutes(via: 'domain' | 'mailbox'): RouteSpec[] {
  const base = `/api/${via}/webhooks`;
  const scope = via === 'domain' ? ('DomainManage' as const) : ('WebhookManage' as const);
  const tokenKinds = [via] as const;
  return [
    route({
      method: 'POST',
      path: base,
      summary: `Register a webhook for ${via === 'domain' ? 'mailboxes of the domain' : 'this mailbox'}; the secret is shown once.`,
      auth: 'bearer',
      scope,
      tokenKinds,
      body: createWebhookInputSchema,
      response: createdWebhookSchema,
      status: 201,
      noStore: true,
      handler: ({ principal, body, services }) => services.webhooks.create(principal, via, body),
    }),
    route({
      method: 'GET',
      path: base,
      summary: 'List webhooks with their delivery health.',
      auth: 'bearer',
      scope,
      tokenKinds,
      response: webhookListSchema,
      status: 200,
      handler: ({ principal, services }) => services.webhooks.list(principal, via),
    }),
    route({
      method: 'DELETE',
      path: `${base}/:webhookId`,
      summary: 'Remove a webhook; nothing more is sent to it.',
      auth: 'bearer',
      scope,
      tokenKinds,
      params: webhookIdParamsSchema,
      response: webhookDeletedSchema,
      status: 200,
      handler: ({ principal, params, services }) => services.webhooks.delete(principal, via, params.webhookId),
    }),
  ];
}

export const domainWebhookRoutes = webhookRoutes('domain');
export const mailboxWebhookRoutes = webhookRoutes('mailbox');
