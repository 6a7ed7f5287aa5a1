import type { ParameterizedContext } from 'koa';

/**
 * HTTP form of a change mark (docs/api.md, "Change marks and ETags"): a weak ETag (the bytes
 * may differ, e.g. `tid`, the content does not), `Cache-Control: private, no-cache` so a shared
 * cache never keeps it and a browser revalidates every time. Answers 304 when `If-None-Match`
 * names the current mark; returns whether it did (then the handler does not run).
 */
export function answerFromChangeMark(ctx: ParameterizedContext, mark: string): boolean {
  const etag = etagOf(mark);
  ctx.set('ETag', etag);
  ctx.set('Cache-Control', 'private, no-cache');
  if (!ifNoneMatchHas(ctx.get('if-none-match'), etag)) return false;
  ctx.status = 304;
  ctx.body = null;
  return true;
}

/** A change mark as a weak entity tag. */
export const etagOf = (mark: string): string => `W/"${mark}"`;

/**
 * RFC 9110 13.1.2: weak comparison over the listed tags. `*` is never taken as a match: a mark
 * does not know whether the message asked for still exists, so `*` gets the full answer (or 404).
 */
export function ifNoneMatchHas(header: string, etag: string): boolean {
  if (!header) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  const wanted = opaque(etag);
  return header.split(',').some((tag) => opaque(tag) === wanted);
}

/** The core's `holds` test for a request's If-None-Match (undefined without one: nothing is held). */
export function heldMarks(ifNoneMatch: string): ((mark: string) => boolean) | undefined {
  return ifNoneMatch ? (mark) => ifNoneMatchHas(ifNoneMatch, etagOf(mark)) : undefined;
}
