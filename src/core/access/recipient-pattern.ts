import { z } from 'zod';
import { isAddress, isDomainName, normalizeAddress, splitAddress } from '../base/address.js';

/**
 * A recipient pattern of an outbound policy (docs/api.md, "Outbound policy"):
 * - `user@domain`: exactly that address;
 * - `@domain`: every address of that domain (not its subdomains);
 * - `@*.domain`: every address of any subdomain of that domain (not the domain itself; list
 *   `@domain` too for both), like a wildcard certificate name.
 */
export type RecipientPattern =
  { kind: 'address'; address: string } | { kind: 'domain'; domain: string } | { kind: 'subdomains'; domain: string };

export function parsePattern(raw: string): RecipientPattern | null {
  const value = normalizeAddress(raw);
  if (value.startsWith('@*.')) {
    const domain = value.slice(3);
    return isDomainName(domain) ? { kind: 'subdomains', domain } : null;
  }
  if (value.startsWith('@')) {
    const domain = value.slice(1);
    return isDomainName(domain) ? { kind: 'domain', domain } : null;
  }
  return isAddress(value) ? { kind: 'address', address: value } : null;
}

/** A pattern as the wire and the manifest carry it: validated and lower-cased. */
export const recipientPatternSchema = z
  .string()
  .max(320)
  .transform(normalizeAddress)
  .refine((v) => parsePattern(v) !== null, { message: 'must be user@domain, @domain or @*.domain' });

const isStrictSubdomain = (domain: string, parent: string): boolean => domain.endsWith(`.${parent}`);

/** Whether one (normalized) address matches a pattern. */
export function matchesPattern(address: string, pattern: string): boolean {
  const p = parsePattern(pattern);
  if (!p) return false;
  const { domain } = splitAddress(address);
  if (p.kind === 'address') return address === p.address;
  if (p.kind === 'domain') return domain === p.domain;
  return isStrictSubdomain(domain, p.domain);
}

/** The first pattern of a list the address matches, or null. */
export const firstMatch = (address: string, patterns: readonly string[]): string | null =>
  patterns.find((p) => matchesPattern(address, p)) ?? null;

/**
 * Whether every address `inner` matches is also matched by `outer`: the subset test a child
 * token's allow list must pass against its parent's (docs/api.md, token policy narrowing).
 */
export function patternCovers(outer: string, inner: string): boolean {
  const o = parsePattern(outer);
  const i = parsePattern(inner);
  if (!o || !i) return false;
  if (i.kind === 'address') return matchesPattern(i.address, outer);
  if (o.kind === 'address') return false;
  if (o.kind === 'domain') return i.kind === 'domain' && i.domain === o.domain;
  // outer = @*.d: covers @x.d and @*.x.d, and @*.d itself.
  return i.domain === o.domain ? i.kind === 'subdomains' : isStrictSubdomain(i.domain, o.domain);
}
