import { z } from 'zod';
import { route, type RouteSpec } from '../route.js';

const dkimRecordSchema = z.object({
  domain: z.string(),
  selector: z.string(),
  name: z.string().describe('where to publish it: <selector>._domainkey.<domain>'),
  type: z.literal('TXT'),
  value: z.string().describe('v=DKIM1; k=rsa; p=…'),
});

/** The DKIM record of the caller's domain (generated with the key on first use). */
export const dkimRoutes: RouteSpec[] = [
  route({
    method: 'GET',
    path: '/api/domain/dkim',
    summary: "The DNS TXT record that publishes the domain's DKIM key.",
    auth: 'bearer',
    scope: 'DomainManage',
    tokenKinds: ['domain'],
    response: dkimRecordSchema,
    status: 200,
    handler: ({ principal, services }) => services.transport.dkim.recordFor(principal),
  }),
];
