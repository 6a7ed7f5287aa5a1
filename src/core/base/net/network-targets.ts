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

/** Global unicast space (RFC 4291 section 2.4): every other IPv6 prefix is local or special. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/**
 * True for a globally routable unicast address. IPv4-mapped IPv6 is judged as its IPv4 address;
 * any other IPv6 must lie in 2000::/3 and in no special-purpose block, so the IPv4-compatible
 * (::/96), NAT64, 6to4, Teredo, ULA, link-local, site-local, multicast and documentation forms
 * are refused whatever IPv4 address they carry.
 */
export function isPublicAddress(ip: string): boolean {
  if (ipaddr.IPv4.isValid(ip)) return ipaddr.IPv4.parse(ip).range() === 'unicast';
  const v6 = parseIPv6(ip);
  if (!v6) return false;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range() === 'unicast';
  // ipaddr.js names every special-purpose block (RFC 6890); only 'unicast' is the public rest.
  return v6.match(GLOBAL_UNICAST) && v6.range() === 'unicast';
}

/**
 * Parses IPv6 text through the WHATWG URL host parser first: ipaddr.js reads a dotted tail as
 * IPv4-mapped ("::8.8.8.8" would become "::ffff:808:808"), the URL parser keeps it IPv4-compatible
 * as a connecting socket would. A zone index is refused: it names a local interface.
 */
function parseIPv6(ip: string): ipaddr.IPv6 | undefined {
  if (!ipaddr.IPv6.isValid(ip) || ip.includes('%')) return undefined;
  try {
    return ipaddr.IPv6.parse(new URL(`http://[${ip}]/`).hostname.slice(1, -1));
  } catch {
    return undefined;
  }
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
