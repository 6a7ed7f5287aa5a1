/**
 * The typed client in use: `openapi-fetch` over the types `openapi-typescript` generated from
 * the server's OpenAPI document (schema.d.ts; regenerate with `make client`). Paths, query
 * parameters, bodies and the envelope's `data` are all checked by the compiler.
 *
 *   MAILBOX_URL=http://127.0.0.1:8080 MAILBOX_TOKEN=mbxm_… npx tsx clients/typescript/example.ts
 */
import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

const client = createClient<paths>({
  baseUrl: process.env.MAILBOX_URL ?? 'http://127.0.0.1:8080',
  headers: { Authorization: `Bearer ${process.env.MAILBOX_TOKEN ?? ''}` },
});

// Send (202, queued); the Idempotency-Key makes a retry of this exact call send once.
const sent = await client.POST('/api/messages/send', {
  params: { header: { 'Idempotency-Key': `example-${Date.now()}` } },
  body: { toAddress: 'bot@example.test', subject: 'Hello', bodyText: 'From the typed client.' },
});
if (sent.error) throw new Error(`send refused: ${sent.error.code} ${sent.error.errMsg}`);
console.log('queued', sent.data.data?.messageId);

// The newest inbound messages: `data.items` is typed, so is each summary.
const page = await client.GET('/api/messages', { params: { query: { direction: 'inbound', limit: 10 } } });
if (page.error) throw new Error(`list refused: ${page.error.code} ${page.error.errMsg}`);
for (const m of page.data.data?.items ?? []) console.log(m.messageId, m.fromAddress, m.subject);
