import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { TrustProxy } from '../../config/config.js';

/** Resolves the client address of one request from its socket peer and X-Forwarded-For. */
export type ClientAddressOf = (
  socketAddress: string | null | undefined,
  forwardedFor: string | readonly string[] | null | undefined,
) => string | null;

/**
 * The client address every channel counts (throttling, `lastUsedRemoteIp`, logs), one function
 * for HTTP, MCP and the Socket.IO handshake (docs/api.md, "Client address"). SMTP takes its
 * socket's peer: nothing relays SMTP with a forwarded-for header here.
 *
 * The chain is the socket's peer followed by X-Forwarded-For read from the right (each proxy
 * appends the address it received the request from). The walk starts at the peer and moves one
 * entry left only while the current hop is a trusted proxy: its index is below the hop count, or
 * its address is in a trusted CIDR. The leftmost entry, which the client writes itself, is never
 * believed for being leftmost. An entry that is not an IP address stops the walk at the last good
 * one. IPv4-mapped IPv6 (`::ffff:192.0.2.1`) is the IPv4 address, so one client has one form.
 */
export function clientAddressResolver(trust: TrustProxy): ClientAddressOf {
  const ranges = trust.kind === 'cidrs' ? trust.cidrs.map(parseRange) : [];
  const trusted = (hop: ipaddr.IPv4 | ipaddr.IPv6, index: number): boolean =>
    trust.kind === 'hops' ? index < trust.hops : ranges.some((r) => hop.kind() === r[0].kind() && hop.match(r));

  return (socketAddress, forwardedFor) => {
    let current = parseAddress(socketAddress);
    if (!current) return null;
    const enabled = trust.kind === 'cidrs' || trust.hops > 0;
    const entries = enabled ? forwardedEntries(forwardedFor) : [];
    for (let index = 0; index < entries.length && trusted(current, index); index++) {
      const next = parseAddress(entries[entries.length - 1 - index]);
      if (!next) break;
      current = next;
    }
    return current.toString();
  };
}

/** X-Forwarded-For entries, left to right; several header lines count as one list (RFC 9110 §5.3). */
function forwardedEntries(header: string | readonly string[] | null | undefined): string[] {
  if (!header) return [];
  const lines = typeof header === 'string' ? [header] : header;
  return lines.flatMap((line) => line.split(',')).map((e) => e.trim());
}

/**
 * An IP address, accepting what proxies write into X-Forwarded-For besides the bare address: an
 * IPv4 `address:port`, an IPv6 `[address]:port` or `[address]`. Strict syntax (node:net), so
 * forms like `127.1` are refused rather than guessed. Normalised: IPv4-mapped IPv6 becomes IPv4.
 */
function parseAddress(raw: string | null | undefined): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (!raw) return null;
  let text = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) text = bracketed[1]!;
  else if (/^[\d.]+:\d+$/.test(text)) text = text.slice(0, text.indexOf(':'));
  if (isIP(text) === 0) return null;
  return ipaddr.process(text);
}

/** A trusted range; a bare address is its own /32 or /128. IPv4-mapped ranges become IPv4. */
function parseRange(cidr: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  const [address, bits] = cidr.includes('/') ? ipaddr.parseCIDR(cidr) : [ipaddr.parse(cidr), -1];
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
    const v4 = (address as ipaddr.IPv6).toIPv4Address();
    return [v4, bits < 0 ? 32 : Math.max(0, bits - 96)];
  }
  return [address, bits < 0 ? (address.kind() === 'ipv4' ? 32 : 128) : bits];
}
