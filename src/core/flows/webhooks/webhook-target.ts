import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { AppError } from '../../base/errors.js';
import { partitionTargets, type NetworkTargetPolicy } from '../../base/net/network-targets.js';

/** An http(s) URL without credentials (a secret in a URL ends up in logs). */
export function parseWebhookUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AppError('WEBHOOK_URL_INVALID', 'url is not an absolute URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new AppError('WEBHOOK_URL_INVALID', 'url must use https or http.');
  if (url.username || url.password) throw new AppError('WEBHOOK_URL_INVALID', 'url may not carry credentials.');
  return url;
}

/**
 * The address to connect to for a webhook URL: the host's addresses (an IP literal is its own),
 * of which only those the network-target rule permits (docs/api.md, "Network targets"). The
 * connection is then pinned to the returned address, so a DNS answer that changes between this
 * check and the connection (DNS rebinding) cannot move it to a private address.
 */
export async function resolveWebhookTarget(
  url: URL,
  policy: NetworkTargetPolicy,
): Promise<{ address: string; family: 4 | 6 }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host)
    ? [host]
    : (await lookup(host, { all: true, verbatim: true }).catch(() => [] as { address: string }[])).map(
        (a) => a.address,
      );
  if (addresses.length === 0) throw new AppError('WEBHOOK_URL_INVALID', `${host} does not resolve.`);
  const { permitted } = partitionTargets(addresses, policy);
  const address = permitted[0];
  if (!address)
    throw new AppError(
      'WEBHOOK_URL_INVALID',
      `${host} resolves only to loopback, private, link-local or reserved addresses, which webhooks may not reach.`,
    );
  return { address, family: isIP(address) === 6 ? 6 : 4 };
}
