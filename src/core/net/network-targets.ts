import ipaddr from 'ipaddr.js';

/**
 * Which addresses the service may open a connection to on someone else's behalf: direct MX
 * delivery and webhooks (docs/api.md, "Network targets"). A name an outsider controls (an MX
 * host, a webhook URL) must not make us connect to loopback, private, link-local (cloud metadata
 * at 169.254.169.254 included), carrier-grade NAT, multicast or reserved space, unless
 * ALLOW_PRIVATE_NETWORK_TARGETS=true (development and tests).
 */
export interface NetworkTargetPolicy {
  allowPrivate: boolean;
}

/** True for a globally routable unicast address (IPv4, IPv6, IPv4-mapped IPv6 judged as IPv4). */
export function isPublicAddress(ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false;
  let addr = ipaddr.parse(ip);
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress())
    addr = (addr as ipaddr.IPv6).toIPv4Address();
  // ipaddr.js names every special-purpose block (RFC 6890); only 'unicast' is the public rest.
  return addr.range() === 'unicast';
}

/** Whether `ip` may be connected to under `policy`. */
export function isPermittedTarget(ip: string, policy: NetworkTargetPolicy): boolean {
  return policy.allowPrivate ? ipaddr.isValid(ip) : isPublicAddress(ip);
}

/** Splits resolved addresses into those we may connect to and those we refuse (kept for logs). */
export function partitionTargets(
  ips: readonly string[],
  policy: NetworkTargetPolicy,
): { permitted: string[]; refused: string[] } {
  const permitted: string[] = [];
  const refused: string[] = [];
  for (const ip of ips) (isPermittedTarget(ip, policy) ? permitted : refused).push(ip);
  return { permitted, refused };
}
