import Router from '@koa/router';
import type { Context } from 'koa';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Principal } from '../../core/access/principal.js';
import type { Services } from '../../core/services.js';
import { bearerToken } from '../shared/bearer-token.js';
import { buildMcpServer, buildToolCatalog } from './server.js';
import { sendWebResponse, toWebRequest } from './web-bridge.js';
import { createOriginGuard } from './origin-guard.js';
import { readMcpBody } from './body-limit.js';
import { createMcpHandler, isLegacyRequest, type McpHttpHandler } from '@modelcontextprotocol/server';
import { buildModernServer } from './modern-server.js';
import { mcpCallLabels, recordMcpRequest } from './request-labels.js';

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
 * The MCP server (Streamable HTTP at /mcp), serving the revisions 2026-07-28 and 2025-11-25 at
 * one URL. Both are stateless: every POST gets a fresh server bound to the request's principal,
 * so any replica answers any request; waits and event streams wake through the shared event bus
 * and read the durable log.
 *
 * Authentication, the Origin rule and the body limit run here, once, before the revision is
 * known. A request carrying the 2026-07-28 `_meta` envelope goes to the official v2 SDK's
 * handler (modern-server.ts); everything else to the v1 SDK's stateless transport (server.ts),
 * which 2025-11-25 clients have always talked to. The two share the tool catalog and runTool.
 *
 * 2025-11-25 without sessions has no standalone SSE stream (GET) and no session to end (DELETE):
 * both answer 405, as the Streamable HTTP spec allows; 2026-07-28 has neither by design.
 */
export function createMcpRouter(services: Services): Router {
  const router = new Router();
  const catalog = buildToolCatalog(services);
  // Room for an upload_attachment call: base64 of the largest attachment plus the JSON around it.
  const maxRequestBodySize = Math.ceil(services.config.MAX_ATTACHMENT_BYTES / 3) * 4 + services.config.MAX_JSON_BYTES;

  const toolNames = new Set(catalog.byName.keys());
  const modern: McpHttpHandler = createMcpHandler(
    ({ authInfo }) => buildModernServer(services, (authInfo?.extra as { principal: Principal }).principal, catalog),
    { legacy: 'reject', onerror: (err) => services.log.debug('mcp.modern', { err: err.message }) },
  );

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
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      parsed = undefined; // the v1 transport answers the parse error
    }
    // Aborted when the connection closes (answered or abandoned): tool calls still running and
    // held event streams stop instead of waiting out their timeouts.
    const gone = new AbortController();
    const onClose: (() => void)[] = [() => gone.abort()];
    ctx.res.once('close', () => {
      for (const run of onClose) run();
    });
    const request = toWebRequest(ctx, body, gone.signal);
    const legacy = parsed === undefined || (await isLegacyRequest(request, parsed));
    const labels = mcpCallLabels(
      legacy ? {} : { method: ctx.get('mcp-method') || undefined, name: ctx.get('mcp-name') || undefined },
      parsed,
      legacy ? 'legacy' : 'modern',
      toolNames,
    );
    const started = performance.now();
    onClose.push(() => recordMcpRequest(labels, ctx.res.statusCode, (performance.now() - started) / 1000));
    if (!legacy) {
      const authInfo = { token: '', clientId: principal.tokenId, scopes: [...principal.scopes], extra: { principal } };
      await sendWebResponse(ctx, await modern.fetch(request, { authInfo, parsedBody: parsed }));
      return;
    }
    const server = buildMcpServer(services, principal, catalog);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      maxRequestBodySize,
    });
    onClose.push(() => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await sendWebResponse(ctx, await transport.handleRequest(request));
  });
  return router;
}
