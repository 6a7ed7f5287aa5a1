import { McpServer, ResourceTemplate, type CallToolResult, type Tool } from '@modelcontextprotocol/server';
import type { Principal } from '../../core/access/principal.js';
import type { Services } from '../../core/services.js';
import { EVENTS_EXTENSION } from './events/catalog.js';
import { registerEventHandlers } from './events/handlers.js';
import { INBOX_TEMPLATE, inboxMetadata, listInboxes, readInbox } from './inbox-resource.js';
import { INSTRUCTIONS, SERVER_INFO, toolNotFound, type ToolCatalog } from './server.js';
import { runTool, type ToolContext } from './tool.js';

const HOUR = 3_600_000;

// The events extension is advertised twice: where the extension says (`extensions`) and where
// @ai-sdk/mcp looks for it (`events`, not in the SDK's capability type, hence the variable).
const CAPABILITIES = {
  tools: { listChanged: false },
  extensions: { [EVENTS_EXTENSION]: {} },
  events: { listChanged: false },
};

/**
 * Cache hints of the 2026-07-28 results, from what each really allows: the tool list and the
 * discovery answer are the same for every caller until the next deploy (public, an hour); which
 * inboxes a token may read, and an inbox's newest messages, change with the mailbox (private, none).
 */
const CACHE_HINTS = {
  'tools/list': { ttlMs: HOUR, cacheScope: 'public' },
  'server/discover': { ttlMs: HOUR, cacheScope: 'public' },
  'resources/templates/list': { ttlMs: HOUR, cacheScope: 'public' },
  'resources/list': { ttlMs: 0, cacheScope: 'private' },
  'resources/read': { ttlMs: 0, cacheScope: 'private' },
} as const;

/**
 * The 2026-07-28 server for one request and one caller, on the official v2 SDK. The tools are the
 * catalog the 2025-11-25 server lists (server.ts), run by the same runTool, so arguments, results,
 * errors and fences cannot differ between the revisions; only the envelope does.
 */
export function buildModernServer(services: Services, principal: Principal, catalog: ToolCatalog): McpServer {
  const mcp = new McpServer(SERVER_INFO, {
    instructions: INSTRUCTIONS,
    cacheHints: CACHE_HINTS,
    capabilities: CAPABILITIES,
  });
  mcp.server.setRequestHandler('tools/list', () => ({ tools: [...catalog.definitions] as unknown as Tool[] }));
  mcp.server.setRequestHandler('tools/call', async (request, ctx) => {
    const tool = catalog.byName.get(request.params.name);
    if (!tool) throw toolNotFound(request.params.name);
    const token = ctx.mcpReq._meta?.progressToken;
    const progress: ToolContext['progress'] =
      token === undefined
        ? undefined
        : (value, total, message) =>
            ctx.mcpReq.notify({
              method: 'notifications/progress',
              params: { progressToken: token, progress: value, total, message },
            });
    const result = await runTool(tool, request.params.arguments, {
      principal,
      services,
      signal: ctx.mcpReq.signal,
      progress,
    });
    return mcp.server.projectCallToolResult(
      result as CallToolResult,
      catalog.definitions.find((d) => d.name === tool.name)?.outputSchema,
    );
  });
  mcp.registerResource(
    'inbox',
    new ResourceTemplate(INBOX_TEMPLATE, { list: () => listInboxes(services, principal) }),
    inboxMetadata,
    (uri, variables) => readInbox(services, principal, uri, variables.address),
  );
  registerEventHandlers(mcp, services, principal);
  return mcp;
}
