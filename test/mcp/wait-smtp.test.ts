import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import nodemailer from 'nodemailer';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mcpClient, ok } from './helpers.js';

// wait_for_message with mail arriving over SMTP (inbound MX on a free port), sent with
// nodemailer the way any outside mail server would deliver it.

let server: TestServer;
let bob: Awaited<ReturnType<TestServer['createMailbox']>>;

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'smtp', 'worker'],
    env: { SMTP_MX_PORT: '0', SMTP_SUBMISSION_PORT: '0' },
  });
  const domain = await server.createDomain();
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
});
afterAll(async () => {
  await server?.close();
});

describe('wait_for_message with SMTP inbound', () => {
  it('returns the message delivered to the MX port', async () => {
    const mx = server.runtime.smtpPorts.mx;
    if (mx === null) throw new Error('the smtp role did not open the MX port');
    const client = await mcpClient(server, bob.token);
    const since = (await ok(client, 'wait_for_message', { timeoutMs: 0 })).eventId;
    const waiting = ok(client, 'wait_for_message', {
      sinceEventId: since,
      from: 'signup@service.example',
      subjectContains: 'code',
      timeoutMs: 20_000,
    });
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: mx,
      secure: false,
      ignoreTLS: true,
      tls: { rejectUnauthorized: false },
    });
    await transport.sendMail({
      from: 'Sign-up <signup@service.example>',
      to: bob.address,
      subject: 'Your code is 424242',
      text: 'Use 424242 to finish signing up.',
    });
    transport.close();
    const res = await waiting;
    expect(res).toMatchObject({
      timedOut: false,
      message: { direction: 'inbound', fromAddress: 'signup@service.example', subject: 'Your code is 424242' },
    });
    const detail = await ok(client, 'get_message', { messageId: res.message.messageId });
    expect(detail.bodyText).toContain('424242');
    await client.close();
  });
});
