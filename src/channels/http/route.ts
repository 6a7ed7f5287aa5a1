import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { AppError } from '../../core/base/errors.js';
import type { Principal } from '../../core/access/principal.js';
import type { Scope, TokenKind } from '../../core/access/scopes.js';
import type { Services } from '../../core/services.js';
import type { MarkedRead } from '../../core/state/messages/change-mark.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

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
  /** `none` only for password login and the approval links (their credential is the body); every other route needs a bearer token. */
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
  /**
   * A write on one mailbox's object, named by the `:messageId` path parameter (docs/contract.md,
   * "Domain tokens on a mailbox's objects"): `route()` adds `mailboxAddress` to the body and the
   * query schemas, and the router checks that it names the object's mailbox before the handler.
   */
  target?: 'message';
  /** Set `Cache-Control: no-store` (every response carrying a plaintext token). */
  noStore?: boolean;
  handler: (input: RouteInput<P, Q, B>) => Promise<unknown>;
}

export const route = <P, Q, B>(spec: RouteSpec<P, Q, B>): RouteSpec<P, Q, B> =>
  spec.target ? { ...spec, query: withMailboxAddress(spec.query), body: withMailboxAddress(spec.body) } : spec;

const mailboxAddressField = z
  .string()
  .trim()
  .max(320)
  .optional()
  .describe("The object's mailbox; a domain token may name it here or in the query (docs/contract.md).");

/** A target route's body or query schema with an optional `mailboxAddress` (an object schema, or none). */
function withMailboxAddress<T>(schema: z.ZodType<T> | 'multipart' | undefined): z.ZodType<T> {
  if (schema === 'multipart') throw new Error('A target route takes a JSON body.');
  if (schema === undefined) return z.strictObject({ mailboxAddress: mailboxAddressField }) as unknown as z.ZodType<T>;
  if (schema instanceof z.ZodOptional) return withMailboxAddress(schema.unwrap() as z.ZodType<T>).optional() as never;
  if (schema instanceof z.ZodObject) return schema.extend({ mailboxAddress: mailboxAddressField }) as never;
  throw new Error('A target route declares its body and query as object schemas.');
}

/** The `mailboxAddress` a target route was given, from the body or the query (both: they must agree). */
export function targetMailboxAddress(query: unknown, body: unknown): string | undefined {
  const inQuery = (query as { mailboxAddress?: string } | undefined)?.mailboxAddress || undefined;
  const inBody = (body as { mailboxAddress?: string } | undefined)?.mailboxAddress || undefined;
  if (inQuery !== undefined && inBody !== undefined && inQuery.toLowerCase() !== inBody.toLowerCase())
    throw new AppError('VALIDATION_FAILED', 'mailboxAddress: the body and the query name different mailboxes.');
  return inBody ?? inQuery;
}

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
