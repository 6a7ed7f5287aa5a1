import { mcpDuration, mcpRequests } from '../../telemetry/metric-registry.js';

/** Methods that become a label as they are; any other is `other` (a client cannot grow the series count). */
const METHODS = new Set([
  'initialize',
  'notifications/initialized',
  'ping',
  'server/discover',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'subscriptions/listen',
  'events/list',
  'events/poll',
  'events/stream',
  'events/subscribe',
  'events/unsubscribe',
]);

export interface McpCallLabels {
  method: string;
  tool: string;
  revision: 'modern' | 'legacy';
}

/**
 * What an MCP request asks for, as metric labels. On 2026-07-28 the `Mcp-Method` and `Mcp-Name`
 * headers say it (the SDK refuses a request whose headers and body disagree, -32020); on
 * 2025-11-25 the body does. Tool names outside the catalog are `other`.
 */
export function mcpCallLabels(
  headers: { method?: string | undefined; name?: string | undefined },
  body: unknown,
  revision: McpCallLabels['revision'],
  toolNames: ReadonlySet<string>,
): McpCallLabels {
  const message = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const params = (message.params ?? {}) as Record<string, unknown>;
  const rawMethod = headers.method ?? (typeof message.method === 'string' ? message.method : '');
  const method = METHODS.has(rawMethod) ? rawMethod : rawMethod === '' ? 'none' : 'other';
  const rawName = method === 'tools/call' ? (headers.name ?? params.name) : undefined;
  const tool =
    rawName === undefined ? 'none' : typeof rawName === 'string' && toolNames.has(rawName) ? rawName : 'other';
  return { method, tool, revision };
}

export function recordMcpRequest(labels: McpCallLabels, status: number, seconds: number): void {
  mcpRequests.inc({ ...labels, status: String(status) });
  mcpDuration.observe({ method: labels.method, tool: labels.tool }, seconds);
}
