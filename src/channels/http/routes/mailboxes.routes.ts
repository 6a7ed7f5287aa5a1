import { route } from '../route.js';
import { createMailboxInputSchema, mailboxCreatedSchema } from '../../../core/state/mailboxes/mailbox.schemas.js';

/** POST /api/mailboxes (spec, Mailboxes). */
export const mailboxRoutes = [
  route({
    method: 'POST',
    path: '/api/mailboxes',
    summary: 'Create a mailbox; the result carries its bootstrap token.',
    auth: 'bearer',
    scope: 'DomainManage',
    tokenKinds: ['domain'],
    body: createMailboxInputSchema,
    response: mailboxCreatedSchema,
    status: 201,
    noStore: true,
    handler: ({ principal, body, services }) => services.mailboxes.create(principal, body),
  }),
];
