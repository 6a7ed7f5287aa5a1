import { expect } from 'vitest';

const MODERN = '2026-07-28';

/** An events/stream held open with fetch; `next` yields each SSE message (skipping heartbeats). */
export async function openEventStream(baseUrl: string, token: string, params: Record<string, unknown>) {
  const abort = new AbortController();
  const res = await fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    signal: abort.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': MODERN,
      'mcp-method': 'events/stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'events/stream',
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const next = async (): Promise<{ method: string; params: any }> => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = frame
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trim())
          .join('');
        if (!data) continue;
        const message = JSON.parse(data);
        if (message.method === 'notifications/events/heartbeat') continue;
        return message;
      }
      const chunk = await Promise.race([
        reader.read(),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no stream message in 20 s')), 20_000)),
      ]);
      if (chunk.done) throw new Error('stream ended');
      buffer += chunk.value;
    }
  };
  return { next, close: () => abort.abort() };
}
