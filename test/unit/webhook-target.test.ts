import { describe, expect, it } from 'vitest';
import { parseWebhookUrl, resolveWebhookTarget } from '../../src/core/flows/webhooks/webhook-target.js';

// The network-target rule as webhooks apply it (docs/api.md, "Network targets"): no loopback,
// private, link-local (cloud metadata) or reserved address unless ALLOW_PRIVATE_NETWORK_TARGETS.
const strict = { allowPrivate: false };

describe('webhook targets', () => {
  it.each([
    'http://127.0.0.1:8080/hook',
    'http://localhost/hook',
    'http://10.1.2.3/hook',
    'http://192.168.0.10/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://100.64.0.1/hook',
  ])('refuses %s by default', async (url) => {
    await expect(resolveWebhookTarget(parseWebhookUrl(url), strict)).rejects.toMatchObject({
      code: 'WEBHOOK_URL_INVALID',
    });
  });

  it('accepts a public address and pins to it; loopback only when private targets are allowed', async () => {
    await expect(resolveWebhookTarget(parseWebhookUrl('https://93.184.216.34/hook'), strict)).resolves.toEqual({
      address: '93.184.216.34',
      family: 4,
    });
    await expect(
      resolveWebhookTarget(parseWebhookUrl('http://127.0.0.1:9/hook'), { allowPrivate: true }),
    ).resolves.toEqual({ address: '127.0.0.1', family: 4 });
  });

  it.each(['ftp://x.example/', 'mailto:a@b.example', 'http://u:p@x.example/', '/relative'])(
    'refuses the URL %s',
    (url) => {
      expect(() => parseWebhookUrl(url)).toThrow(expect.objectContaining({ code: 'WEBHOOK_URL_INVALID' }));
    },
  );
});
