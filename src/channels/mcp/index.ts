import Router from '@koa/router';
import type { Services } from '../../core/services.js';

/** The MCP server (Streamable HTTP at /mcp). (Being built.) */
export function createMcpRouter(_services: Services): Router {
  return new Router();
}
