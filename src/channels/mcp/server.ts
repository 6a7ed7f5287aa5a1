import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ProtocolError } from '@modelcontextprotocol/server';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../core/access/principal.js';
import type { Services } from '../../core/services.js';
import { runTool, toolDefinition, type McpTool, type ToolContext } from './tool.js';
import { allTools } from './tools/index.js';
import { registerInboxResource } from './inbox-resource.js';

export const SERVER_INFO = { name: 'mailbox-service', version: '0.1.0' };

export const INSTRUCTIONS =
  'E-mail for agents. Every call acts for the bearer token: a mailbox token acts on its own mailbox (mailboxAddress may be ' +
  'omitted); a domain token acts on any mailbox of its domain and must name it with mailboxAddress. Read with list_messages, ' +
  'get_message and get_thread; send with send_mail or reply_message (queued, not yet delivered); wait for incoming mail (for ' +
  'example a verification code) with wait_for_message. Tool errors are isError results whose text is ' +
  '{"code": <HTTP status>, "errorCode": "<STABLE_CODE>", "errMsg": "..."}; branch on errorCode.';

/**
 * tools/call as registered: any params. The SDK validates a tools/call against its strict schema
 * twice, first where a failure is an uncaught ZodError (JSON-RPC -32603, internal error), then in
 * Server's tools/call wrapper where it is -32602 invalid params (JSON-RPC 2.0 §5.1). Registering
 * this lenient schema lets the second, correct answer through: `arguments: "text"` is a caller's
 * mistake, not a server fault.
 */
const LenientToolCall = z.object({ method: z.literal('tools/call'), params: z.unknown() });

/** An unknown tool name is invalid params (JSON-RPC -32602) on both revisions. */
const unknownTool = (name: string) => `Unknown tool ${name}.`;
export const toolNotFound = (name: string): ProtocolError => new ProtocolError(-32602, unknownTool(name));

/** The tools, built once per process (schemas converted once, not per request). */
export interface ToolCatalog {
  byName: ReadonlyMap<string, McpTool>;
  definitions: readonly Tool[];
}

export function buildToolCatalog(services: Services): ToolCatalog {
  const tools = allTools({ maxAttachmentBytes: services.config.MAX_ATTACHMENT_BYTES });
  return { byName: new Map(tools.map((t) => [t.name, t])), definitions: tools.map(toolDefinition) };
}

/**
 * One MCP server for one HTTP request and one authenticated caller (stateless mode).
 *
 * Tools are served through the SDK's lower-level request handlers rather than
 * `McpServer.registerTool`: registerTool validates arguments before the callback and reports a
 * failure as bare text, without the HTTP-equivalent code every tool error must carry. Here the
 * same zod schema is listed (tools/list) and applied (runTool), and its failure is a 400 worded
 * like HTTP's. Resources use the high-level API as is.
 */
export function buildMcpServer(services: Services, principal: Principal, catalog: ToolCatalog): McpServer {
  const mcp = new McpServer(SERVER_INFO, { instructions: INSTRUCTIONS });
  mcp.server.registerCapabilities({ tools: { listChanged: false } });
  mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...catalog.definitions] }));
  mcp.server.setRequestHandler(LenientToolCall, async (raw, extra) => {
    // The SDK's tools/call wrapper has validated `raw` against CallToolRequestSchema by now.
    const request = raw as unknown as z.infer<typeof CallToolRequestSchema>;
    const tool = catalog.byName.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, unknownTool(request.params.name));
    const token = extra._meta?.progressToken;
    const progress: ToolContext['progress'] =
      token === undefined
        ? undefined
        : (value, total, message) =>
            extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: value, total, message },
            });
    return runTool(tool, request.params.arguments, { principal, services, signal: extra.signal, progress });
  });
  registerInboxResource(mcp, services, principal);
  // registerResource announces listChanged; a stateless server has no stream to announce it on.
  mcp.server.registerCapabilities({ resources: { listChanged: false, subscribe: false } });
  return mcp;
}
