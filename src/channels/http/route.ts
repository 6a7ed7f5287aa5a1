import type { ParameterizedContext } from 'koa';
import type { z } from 'zod';
import type { Principal } from '../../core/auth/principal.js';
import type { Scope, TokenKind } from '../../core/tokens/scopes.js';
import type { Services } from '../../core/services.js';
import type { MarkedRead } from '../../core/messages/change-mark.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  principal: Principal;
  services: Services;
  remoteIp: string | null;
  ctx: ParameterizedContext;
}

/**
 * One HTTP route, declared as data. The same declaration drives the router, input validation,
 * the OpenAPI document and the test-side authorization matrix, so a route cannot ship without
 * its schema, its documented scope or its row in the matrix.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- defaults let routes of different shapes share one table
export interface RouteSpec<P = any, Q = any, B = any> {
  method: HttpMethod;
  /** Koa-router path, e.g. `/api/messages/:messageId`. */
  path: string;
  summary: string;
  /** `none` only for password login; every other route needs a bearer token. */
  auth: 'bearer' | 'none';
  /** Scope the core requires (documentation and the authorization matrix; the core enforces it). */
  scope?: Scope;
  /** Where a domain token needs another scope than `scope` (approve/reject: DomainManage). */
  domainScope?: Scope;
  /** Token kinds the route serves; the other kind gets 403. */
  tokenKinds: readonly TokenKind[];
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  /** A zod schema for JSON, or `multipart` for the attachment upload form. */
  body?: z.ZodType<B> | 'multipart';
  /** Schema of `data` on success (OpenAPI). */
  response: z.ZodType;
  status: 200 | 201 | 202;
  /** Honours the `Idempotency-Key` header (documented as such in OpenAPI). */
  idempotent?: boolean;
  /**
   * A GET whose answer has a change mark (core/messages/change-mark.ts): sent as a weak ETag, and
   * `If-None-Match` with the current one is 304 before the handler runs. `target` (message,
   * thread by id): the mark is read before the handler. `mailbox` (the list): the handler returns
   * a `ChangeMarked` answer from MessageService.listUnlessUnchanged, which reads the mark first only
   * for an `If-None-Match`. `mailboxAddress` comes from the query.
   */
  changeMark?: MarkedRead;
  /** Set `Cache-Control: no-store` (every response carrying a plaintext token). */
  noStore?: boolean;
  handler: (input: RouteInput<P, Q, B>) => Promise<unknown>;
}

export const route = <P, Q, B>(spec: RouteSpec<P, Q, B>): RouteSpec<P, Q, B> => spec;

/** A handler result sent as bytes instead of the envelope (downloads). */
export class RawResponse {
  constructor(
    readonly body: import('node:stream').Readable | Buffer,
    readonly contentType: string,
    readonly contentDisposition?: string,
    readonly sizeBytes?: number,
  ) {}
}

/** A handler result that carries its own change mark (routes with `changeMark: 'mailbox'`). */
export class ChangeMarked {
  constructor(
    readonly data: unknown,
    readonly mark: string,
  ) {}
}
