import { describe, expect, it } from 'vitest';
import { secretIn } from '../../src/core/flows/policy/secret-in-body.js';
import { mintTokenPlaintext } from '../../src/core/access/token-format.js';

describe('secretIn (the outbound check of rule secretInBody)', () => {
  it.each([
    ['mailboxServiceToken', `token: ${mintTokenPlaintext('mailbox')}`],
    ['mailboxServiceToken', `domain ${mintTokenPlaintext('domain')}.`],
    ['privateKey', '-----BEGIN RSA PRIVATE KEY-----\nMIIE...'],
    ['privateKey', '-----BEGIN PRIVATE KEY-----'],
    ['awsAccessKey', 'aws_access_key_id = AKIAIOSFODNN7EXAMPLE'],
    ['githubToken', `ghp_${'x'.repeat(36)}`],
    ['slackToken', 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx'],
    ['slackToken', 'https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX'],
    ['apiKeyAssignment', 'OPENAI_API_KEY="sk-proj-9fQ2xL7vB3nR8tK1mZ4wY6cH0dJ5pS"'],
    ['apiKeyAssignment', '{"client_secret": "7fG2kLp9QxW4vN8rT1yB6mC3"}'],
  ] as const)('%s in %j', (kind, text) => {
    expect(secretIn([text])).toBe(kind);
  });

  it.each([
    'Your verification code is 482913.',
    'password: please reset it in the portal',
    'token = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
    'The AKIA prefix marks AWS keys; mbxm_ marks ours.',
    '-----BEGIN PUBLIC KEY-----',
    `mbxm_${'A'.repeat(38)}`,
  ])('no secret in %j', (text) => {
    expect(secretIn([text])).toBeNull();
  });
});
