import { expect } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { TestServer } from '../support/harness.js';

/**
 * The SDK's own client over Streamable HTTP, as an agent would use it. listTools runs first on
 * purpose: the client then validates every structuredContent against the tool's outputSchema,
 * so each successful call below also checks the declared output schema.
 */
export async function mcpClient(server: TestServer, token: string, opts: { listTools?: boolean } = {}): Promise<Client> {
  const client = new Client({ name: 'mailbox-service-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  if (opts.listTools !== false) await client.listTools();
  return client;
}

/** Calls a tool and returns the raw result. */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The structured result of a successful call (the HTTP `data`). */
export async function ok<T = any>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const result = await call(client, name, args);
  if (result.isError) throw new Error(`${name} failed: ${textOf(result)}`);
  // The text block repeats the structured result for text-only clients.
  expect(JSON.parse(textOf(result))).toEqual(result.structuredContent);
  return result.structuredContent as T;
}

/** The `{ code, errMsg }` of a failed call. */
export async function fails(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ code: number; errMsg: string; retryAfterSeconds?: number }> {
  const result = await call(client, name, args);
  if (!result.isError) throw new Error(`${name} unexpectedly succeeded: ${textOf(result)}`);
  expect(result.structuredContent).toBeUndefined();
  return JSON.parse(textOf(result));
}

export function textOf(result: CallToolResult): string {
  const block = result.content[0];
  if (!block || block.type !== 'text') throw new Error('no text content');
  return block.text;
}

/** Asserts an HTTP envelope error and an MCP tool error say the same thing. */
export function sameError(http: { status: number; body: { errMsg: string | null } }, mcp: { code: number; errMsg: string }): void {
  expect(mcp).toMatchObject({ code: http.status, errMsg: http.body.errMsg });
}
