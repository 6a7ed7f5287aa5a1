import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { rowsOf, sendBody, twoMailboxes } from './helpers.js';
import { sql } from '../../src/storage/database.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    env: { SEND_RATE_LIMIT_PER_MINUTE: '3', MAX_RECIPIENTS: '3', MAX_JSON_BYTES: '3000000' },
  });
});
afterAll(async () => {
  await server?.close();
});
const q = rowsOf(() => server);

describe('send limits', () => {
  it('answers 429 with a whole-second Retry-After past the configured per-mailbox rate, without writing', async () => {
    const { a, b } = await twoMailboxes(server);
    const api = server.api(a.token);
    const first = await api.post('/api/messages/send', sendBody('x@external.example'), {
      'idempotency-key': 'k-first',
    });
    expect(first.status).toBe(202);
    for (let i = 0; i < 2; i++)
      expect((await api.post('/api/messages/send', sendBody('x@external.example'))).status).toBe(202);
    const limited = await api.post('/api/messages/send', sendBody('x@external.example'));
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ data: null, code: 429 });
    const retryAfter = limited.headers.get('retry-after');
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    const reply = await api.post(`/api/messages/${first.body.data.messageId}/reply`, { bodyText: 'again' });
    expect(reply.status).toBe(429);
    // A retry of an accepted request is answered from storage and costs no budget.
    const replay = await api.post('/api/messages/send', sendBody('x@external.example'), {
      'idempotency-key': 'k-first',
    });
    expect(replay.status).toBe(202);
    expect(replay.body.data.messageId).toBe(first.body.data.messageId);
    const [count] = await q`select count(*)::int as n from message where mailbox_id = ${a.mailboxId}`;
    expect(count.n).toBe(3);
    // The budget is per mailbox.
    expect((await server.api(b.token).post('/api/messages/send', sendBody('x@external.example'))).status).toBe(202);
  });

  it('prefers the mailbox limit, then the domain limit, over the configured default', async () => {
    const { a, b } = await twoMailboxes(server, { sendRateLimitPerMinute: 1 });
    await server.runtime.services.db.rows(
      sql`update mailbox set send_rate_limit_per_minute = 2 where id = ${b.mailboxId}`,
    );
    const aApi = server.api(a.token);
    expect((await aApi.post('/api/messages/send', sendBody('x@external.example'))).status).toBe(202);
    expect((await aApi.post('/api/messages/send', sendBody('x@external.example'))).status).toBe(429);
    const bApi = server.api(b.token);
    expect((await bApi.post('/api/messages/send', sendBody('x@external.example'))).status).toBe(202);
    expect((await bApi.post('/api/messages/send', sendBody('x@external.example'))).status).toBe(202);
    expect((await bApi.post('/api/messages/send', sendBody('x@external.example'))).status).toBe(429);
  });

  it('caps recipients (to + cc + bcc) at MAX_RECIPIENTS and bodies at 1 MiB characters', async () => {
    const { a } = await twoMailboxes(server);
    const api = server.api(a.token);
    const tooMany = await api.post(
      '/api/messages/send',
      sendBody(['a@external.example', 'b@external.example'], {
        ccAddresses: ['c@external.example'],
        bccAddresses: ['d@external.example'],
      }),
    );
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.errMsg).toMatch(/recipients/i);
    const bigBody = await api.post(
      '/api/messages/send',
      sendBody('a@external.example', { bodyText: 'x'.repeat(1_048_577) }),
    );
    expect(bigBody.status).toBe(400);
    expect(bigBody.body.errMsg).toMatch(/bodyText/);
    const exactly = await api.post(
      '/api/messages/send',
      sendBody(['a@external.example', 'b@external.example'], { ccAddresses: ['c@external.example'] }),
    );
    expect(exactly.status).toBe(202);
  });
});
