import Router from '@koa/router';
import type { Context } from 'koa';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Principal } from '../../core/auth/principal.js';
import type { Services } from '../../core/services.js';
import { bearerToken } from '../shared/bearer-token.js';
import { buildMcpServer, buildToolCatalog } from './server.js';
import { sendWebResponse, toWebRequest } from './web-bridge.js';
import { createOriginGuard } from './origin-guard.js';
import { readMcpBody } from './body-limit.js';

export const MCP_PATH = '/mcp';

/**
 * Bearer auth before any MCP exchange (docs/contract.md, MCP): a missing or bad token is an HTTP 401; the
 * envelope middleware renders it like any HTTP error, `WWW-Authenticate` included (RFC 6750 §3).
 * The client address is the one the HTTP app resolved (channels/shared/client-address.ts).
 */
function authenticate(ctx: Context, services: Services): Promise<Principal> {
  return services.tokenAuth.authenticate(bearerToken(ctx.get('authorization') || undefined), ctx.ip || null);
}

/**
 * The MCP server (Streamable HTTP at /mcp), stateless: every POST gets a fresh server and
 * transport bound to the request's principal (`sessionIdGenerator: undefined`). Nothing lives
 * in one process's memory between requests, so any replica can answer any request without
 * sticky sessions; wait_for_message wakes through the shared event bus and re-reads the log.
 *
 * Stateless means no standalone SSE stream (GET) and no session to end (DELETE): both answer
 * 405, as the Streamable HTTP spec allows. Server-to-client messages therefore travel only on
 * the response stream of a request in flight (progress during wait_for_message).
 */
export function createMcpRouter(services: Services): Router {
  const router = new Router();
  const catalog = buildToolCatalog(services);
  // Room for an upload_attachment call: base64 of the largest attachment plus the JSON around it.
  const maxRequestBodySize = Math.ceil(services.config.MAX_ATTACHMENT_BYTES / 3) * 4 + services.config.MAX_JSON_BYTES;

  const guardOrigin = createOriginGuard(services.config.MCP_ALLOWED_ORIGINS, services.config.PUBLIC_BASE_URL);

  router.all(MCP_PATH, async (ctx) => {
    if (guardOrigin(ctx) === 'answered') return;
    const principal = await authenticate(ctx, services);
    if (ctx.method !== 'POST') {
      ctx.status = 405;
      ctx.set('Allow', 'POST');
      ctx.body = {
        jsonrpc: '2.0',
        error: { code: -32000, message: 'Method not allowed: this server is stateless; send JSON-RPC with POST.' },
        id: null,
      };
      return;
    }
    let body: Buffer;
    try {
      body = await readMcpBody(ctx.req, services.config.MAX_JSON_BYTES, maxRequestBodySize);
    } catch (err) {
      // The rest of a refused body is still on the wire: this connection cannot carry another request.
      if (!ctx.req.readableEnded) ctx.set('Connection', 'close');
      throw err;
    }
    const server = buildMcpServer(services, principal, catalog);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      maxRequestBodySize,
    });
    // Connection gone (answered or abandoned): closing aborts tool calls still running, so an
    // abandoned wait_for_message stops instead of waiting out its timeout.
    ctx.res.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await sendWebResponse(ctx, await transport.handleRequest(toWebRequest(ctx, body)));
  });
  return router;
}
