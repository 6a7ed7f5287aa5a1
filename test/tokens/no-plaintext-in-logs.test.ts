import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { setMailboxPassword } from '../support/tenants.js';
import { createPinoLogger } from '../../src/logging/pino-logger.js';
import { mintTokenPlaintext } from '../../src/core/access/token-format.js';

// A plaintext token or password must never reach a log line (docs/contract.md: at rest only a hash and,
// briefly, ciphertext). The server logs at debug level into memory while every flow that
// handles a plaintext runs; then no line may contain one.

const lines: string[] = [];
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    log: createPinoLogger('debug', { onLine: (line) => lines.push(line) }),
    env: { LOGIN_FAILURES_PER_15M: '2' },
  });
});
afterAll(async () => {
  await server?.close();
});

describe('logs', () => {
  it('never contain a plaintext token or a password', async () => {
    const password = 'log-test-password-123';
    const secrets: string[] = [password];
    const d = await server.createDomain();
    secrets.push(d.token);
    const m = await server.createMailbox(d.token, `logs@${d.name}`);
    secrets.push(m.token);
    await setMailboxPassword(server, m.mailboxId, password);
    const self = await server
      .api(m.token)
      .post('/api/mailbox/access-tokens', { tokenName: 'x', scopes: ['MailboxRead'] });
    secrets.push(self.body.data.accessToken);
    await server.api(m.token).post(`/api/mailbox/access-tokens/${self.body.data.tokenId}/reveal`);
    const byDomain = await server
      .api(d.token)
      .post(`/api/domain/mailboxes/${m.mailboxId}/access-tokens`, { tokenName: 'y', scopes: ['MailboxRead'] });
    secrets.push(byDomain.body.data.accessToken);
    await server
      .api(d.token)
      .post(`/api/domain/mailboxes/${m.mailboxId}/access-tokens/${byDomain.body.data.tokenId}/reveal`);
    await server.api(m.token).post(`/api/mailbox/access-tokens/${self.body.data.tokenId}/disable`);
    await server.api(m.token).delete(`/api/mailbox/access-tokens/${self.body.data.tokenId}`);
    await server.api(self.body.data.accessToken).get('/api/mailbox/access-tokens'); // deleted: 401
    const unknown = mintTokenPlaintext('mailbox');
    secrets.push(unknown);
    await server.api(unknown).get('/api/mailbox/access-tokens');
    await server.api(d.token).post(`/api/domain/mailboxes/${m.mailboxId}/access-tokens/${m.tokenId}/disable`);
    const minted = await server.api().post('/api/mailbox/auth/login/password', { mailboxAddress: m.address, password });
    secrets.push(minted.body.data.accessToken);
    await server.api().post('/api/mailbox/auth/login/password', { mailboxAddress: m.address, password }); // reused
    for (let i = 0; i < 3; i++)
      await server
        .api()
        .post('/api/mailbox/auth/login/password', { mailboxAddress: m.address, password: `${password}-wrong` });
    await server.runtime.services.usage.flush();

    // The capture works: the governance and login events were logged …
    const events = lines.map((l) => JSON.parse(l).event as string);
    expect(events).toEqual(
      expect.arrayContaining([
        'token.revealed',
        'token.disabled',
        'token.deleted',
        'login.minted',
        'login.reused',
        'login.failed',
      ]),
    );
    // … and carry no secret. The 12-char display prefix is public (tokenPrefix), so check the rest.
    const all = lines.join('\n');
    for (const secret of secrets) expect(all).not.toContain(secret.startsWith('mbx') ? secret.slice(12) : secret);
  });
});
