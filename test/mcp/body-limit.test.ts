import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { fails, mcpClient, ok } from './helpers.js';

// docs/api.md, "Per-token bounds": an MCP request may be MAX_JSON_BYTES, except a tools/call of
// upload_attachment, which may carry the attachment (base64) too. Refusals are the 413 envelope,
// before the body is read further.

const MAX_JSON_BYTES = 64 * 1024;
const MAX_ATTACHMENT_BYTES = 512 * 1024;
let server: TestServer;
let a: { address: string; token: string };

beforeAll(async () => {
  server = await startTestServer({
    env: { MAX_JSON_BYTES: String(MAX_JSON_BYTES), MAX_ATTACHMENT_BYTES: String(MAX_ATTACHMENT_BYTES) },
  });
  const d = await server.createDomain();
  a = await server.createMailbox(d.token, `a@${d.name}`);
});
afterAll(async () => {
  await server?.close();
});

const rpc = (body: string) =>
  fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${a.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body,
  });
const call = (name: string, args: Record<string, unknown>) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

describe('MCP request body limit per tool', () => {
  it('refuses a list_messages call larger than MAX_JSON_BYTES with the 413 envelope', async () => {
    const res = await rpc(call('list_messages', { limit: 1, padding: 'x'.repeat(MAX_JSON_BYTES * 2) }));
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: 413, data: null });
  });

  it('refuses a call that names upload_attachment first and another tool last (duplicate key)', async () => {
    const big = 'x'.repeat(MAX_JSON_BYTES * 2);
    const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"upload_attachment","arguments":{"padding":"${big}"},"name":"list_messages"}}`;
    const res = await rpc(body);
    expect(res.status).toBe(413);
    await res.arrayBuffer();
  });

  it('accepts an upload_attachment call up to the attachment size, and small calls of any tool', async () => {
    const client = await mcpClient(server, a.token);
    const up = await ok(client, 'upload_attachment', {
      contentBase64: Buffer.alloc(MAX_ATTACHMENT_BYTES, 1).toString('base64'),
      filename: 'max.bin',
    });
    expect(up.sizeBytes).toBe(MAX_ATTACHMENT_BYTES);
    expect((await ok(client, 'list_messages', { limit: 1 })).items).toEqual([]);
    expect(
      (
        await fails(client, 'upload_attachment', {
          contentBase64: Buffer.alloc(MAX_ATTACHMENT_BYTES + 1).toString('base64'),
          filename: 'b',
        })
      ).code,
    ).toBe(413);
    await client.close();
  });
});
