import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Context } from 'koa';

/** The Koa request as a web Request for the SDK's web-standard transport (body streamed, not buffered). */
export function toWebRequest(ctx: Context, body?: Buffer, signal?: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(ctx.req.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  // The transport reads the URL only for request metadata; a fixed origin keeps a hostile Host
  // header from ever making the URL unparsable.
  return new Request(new URL(ctx.originalUrl, 'http://localhost'), {
    method: ctx.method,
    headers,
    body: body ?? (Readable.toWeb(ctx.req) as ReadableStream<Uint8Array>),
    duplex: 'half',
    ...(signal ? { signal } : {}),
  } as RequestInit);
}

/**
 * Writes the transport's Response (JSON or an SSE stream) to the Node response. A client that
 * goes away mid-stream is an expected end of a long-poll, not an error: the pipeline is
 * destroyed quietly (the SDK's own Node adapter prints every such reset to stderr).
 */
export async function sendWebResponse(ctx: Context, response: Response): Promise<void> {
  ctx.respond = false; // this function writes the answer; Koa must not
  const headers = Object.fromEntries(response.headers);
  // Refused before the body was read to its end (413): the rest of it is still on the wire, so
  // this connection cannot carry another request; close it after the answer.
  if (!ctx.req.readableEnded) headers.connection = 'close';
  ctx.res.writeHead(response.status, headers);
  if (!response.body) {
    ctx.res.end();
    return;
  }
  await pipeline(
    Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>),
    ctx.res,
  ).catch(() => undefined);
}
