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
export async function mcpClient(
  server: TestServer,
  token: string,
  opts: { listTools?: boolean } = {},
): Promise<Client> {
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
  // The text block repeats the structured result for text-only clients; results holding message
  // bodies give the metadata as JSON and fence each body (src/channels/mcp/untrusted-text.ts).
  const text = textOf(result);
  if (text.startsWith('Metadata (JSON')) expect(text.split('\n')[1]).toBeTruthy();
  else expect(JSON.parse(text)).toEqual(result.structuredContent);
  return result.structuredContent as T;
}

/** The `{ code, errorCode, errMsg }` of a failed call. */
export async function fails(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ code: number; errorCode: string; errMsg: string; retryAfterSeconds?: number }> {
  const result = await call(client, name, args);
  if (!result.isError) throw new Error(`${name} unexpectedly succeeded: ${textOf(result)}`);
  expect(result.structuredContent).toBeUndefined();
  const payload = JSON.parse(textOf(result));
  // The stable code reaches the client, as text and (structured) in _meta.
  expect(payload.errorCode).toMatch(/^[A-Z][A-Z0-9_]+$/);
  expect(result._meta?.['mailbox-service/error']).toEqual(payload);
  return payload;
}

export function textOf(result: CallToolResult): string {
  const block = result.content[0];
  if (!block || block.type !== 'text') throw new Error('no text content');
  return block.text;
}

/** Asserts an HTTP envelope error and an MCP tool error say the same thing. */
export function sameError(
  http: { status: number; body: { errorCode: string | null; errMsg: string | null } },
  mcp: { code: number; errorCode?: string; errMsg: string },
): void {
  expect(mcp).toMatchObject({ code: http.status, errorCode: http.body.errorCode, errMsg: http.body.errMsg });
}
