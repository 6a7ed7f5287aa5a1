import { z } from 'zod';
import { route, type RouteInput, type RouteSpec } from '../route.js';
import type { Governance } from '../../../core/access/token.views.js';
import type { Scope, TokenKind } from '../../../core/access/scopes.js';
import {
  createTokenInputSchema,
  idParam,
  tokenCreatedSchema,
  tokenDeletedSchema,
  tokenRecordSchema,
  tokenRevealedSchema,
} from '../../../core/access/token.schemas.js';

interface GovernanceRoutesOptions {
  /** Collection path, e.g. `/api/mailbox/access-tokens`. */
  base: string;
  scope: Scope;
  tokenKinds: readonly TokenKind[];
  /** Path parameters of `base` besides tokenId (the domain routes add mailboxId). */
  ownerParams: Record<string, typeof idParam>;
  /** Resolves whose tokens the call manages; throws the 403/404 of the route family. */
  govern: (input: RouteInput<Record<string, string>, unknown, unknown>) => Governance | Promise<Governance>;
  who: string;
}

/**
 * The five token governance routes. docs/contract.md: "the token routes mirror the mailbox token
 * routes", so the mailbox self routes and the domain routes are both built here, and the only
 * difference is who governs (`govern`).
 */
export function tokenGovernanceRoutes(o: GovernanceRoutesOptions): RouteSpec[] {
  const collection = Object.keys(o.ownerParams).length ? z.object(o.ownerParams) : undefined;
  const item = z.object({ ...o.ownerParams, tokenId: idParam });
  const common = { auth: 'bearer', scope: o.scope, tokenKinds: o.tokenKinds } as const;
  return [
    route({
      ...common,
      method: 'GET',
      path: o.base,
      summary: `List ${o.who} access tokens.`,
      params: collection,
      response: z.array(tokenRecordSchema),
      status: 200,
      handler: async (input) => input.services.tokens.list(await o.govern(input)),
    }),
    route({
      ...common,
      method: 'POST',
      path: o.base,
      summary: `Create a ${o.who} access token (scopes ⊆ caller's, expiry ≤ caller's).`,
      params: collection,
      body: createTokenInputSchema,
      response: tokenCreatedSchema,
      status: 201,
      noStore: true,
      handler: async (input) => input.services.tokens.create(await o.govern(input), input.body),
    }),
    route({
      ...common,
      method: 'POST',
      path: `${o.base}/:tokenId/reveal`,
      summary: 'Reveal the plaintext while it is still available (else 409).',
      params: item,
      response: tokenRevealedSchema,
      status: 200,
      noStore: true,
      handler: async (input) =>
        input.services.tokens.reveal(await o.govern(input), input.params.tokenId, input.remoteIp),
    }),
    route({
      ...common,
      method: 'POST',
      path: `${o.base}/:tokenId/disable`,
      summary: 'Disable a token; it answers 401 from now on.',
      params: item,
      response: tokenRecordSchema,
      status: 200,
      handler: async (input) => input.services.tokens.disable(await o.govern(input), input.params.tokenId),
    }),
    route({
      ...common,
      method: 'DELETE',
      path: `${o.base}/:tokenId`,
      summary: 'Delete a token record.',
      params: item,
      response: tokenDeletedSchema,
      status: 200,
      handler: async (input) => input.services.tokens.remove(await o.govern(input), input.params.tokenId),
    }),
  ];
}

/** Token self-governance (spec): a mailbox token with TokenManage; a domain token gets 403. */
export const tokenRoutes: RouteSpec[] = tokenGovernanceRoutes({
  base: '/api/mailbox/access-tokens',
  scope: 'TokenManage',
  tokenKinds: ['mailbox'],
  ownerParams: {},
  who: "the calling mailbox's",
  govern: ({ principal, services }) => services.tokens.self(principal),
});
