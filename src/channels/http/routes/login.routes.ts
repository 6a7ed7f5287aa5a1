import { route, type RouteSpec } from '../route.js';
import { loginInputSchema, loginResultSchema } from '../../../core/access/login.schemas.js';

/**
 * Password login (spec): no bearer token; the credentials are the body. The result carries a
 * plaintext token, hence no-store.
 */
export const loginRoutes: RouteSpec[] = [
  route({
    method: 'POST',
    path: '/api/mailbox/auth/login/password',
    summary: 'Exchange a mailbox address and password for a mailbox token.',
    // No token, so no kind to serve: the authorization matrix only checks that a header is ignored.
    auth: 'none',
    tokenKinds: [],
    body: loginInputSchema,
    response: loginResultSchema,
    status: 200,
    noStore: true,
    handler: ({ body, services, remoteIp }) => services.login.login(body, remoteIp),
  }),
];
