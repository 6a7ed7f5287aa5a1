import { z } from 'zod';
import { AppError } from './errors.js';

import { domainToASCII, domainToUnicode } from 'node:url';

// A pragmatic RFC 5321 subset, widened by RFC 6531 §3.3 to UTF-8: a dot-atom local part (ASCII
// atext or any non-ASCII letter, mark, number, punctuation or symbol), domain labels that are
// LDH or U-labels. Quoted local parts, source routes and address literals are refused on purpose
// (open-relay tricks); so are controls and spaces, in any script.
const ATEXT = String.raw`[A-Za-z0-9!#$%&'*+/=?^_\x60{|}~\-]|[^\x00-\x7f\p{C}\p{Z}]`;
const ATOM = `(?:${ATEXT})+`;
const LETTER_DIGIT = String.raw`[A-Za-z0-9\p{L}\p{M}\p{N}]`;
const LDH = String.raw`[A-Za-z0-9\p{L}\p{M}\p{N}\-]`;
const LABEL = `${LETTER_DIGIT}(?:${LDH}{0,61}${LETTER_DIGIT})?`;
const TOP_LABEL = String.raw`[A-Za-z\p{L}]` + `${LDH}{0,61}${LETTER_DIGIT}`;
const ADDRESS_RE = new RegExp(`^${ATOM}(?:\\.${ATOM})*@(?:${LABEL}\\.)+${TOP_LABEL}$`, 'u');
const DOMAIN_RE = new RegExp(`^(?:${LABEL}\\.)+${TOP_LABEL}$`, 'u');

/** No character beyond US-ASCII. */
export const isAscii = (value: string): boolean => !/\P{ASCII}/u.test(value);

export function isAddress(value: string): boolean {
  if (Buffer.byteLength(value) > 320) return false;
  const at = value.lastIndexOf('@');
  return (
    at > 0 && Buffer.byteLength(value.slice(0, at)) <= 64 && ADDRESS_RE.test(value) && isDomainName(value.slice(at + 1))
  );
}

/** A domain name whose A-label form (RFC 5890) fits DNS's 253 octets. */
export const isDomainName = (value: string): boolean => {
  if (!DOMAIN_RE.test(value)) return false;
  const ascii = isAscii(value) ? value : domainToASCII(value);
  return ascii.length > 0 && ascii.length <= 253;
};

/**
 * Addresses are stored and compared lower-cased (hosted local parts are case-insensitive here),
 * in Unicode NFC, with an IDN domain in its U-label form whichever form it came in (one form, so
 * `jörg@bücher.example` and `jörg@xn--bcher-kva.example` are the same mailbox).
 */
export function normalizeAddress(value: string): string {
  const lower = value.trim().toLowerCase();
  if (isAscii(lower) && !lower.includes('xn--')) return lower;
  const at = lower.lastIndexOf('@');
  if (at === -1) return lower.normalize('NFC');
  return `${lower.slice(0, at).normalize('NFC')}@${unicodeDomain(lower.slice(at + 1))}`;
}

/** A domain name as it is stored and compared: lower case, an IDN in its U-label form. */
export const normalizeDomain = (name: string): string => {
  const lower = name.trim().toLowerCase();
  return isAscii(lower) && !lower.includes('xn--') ? lower : unicodeDomain(lower);
};

/** An IDN domain in its U-label form (lower-case, NFC); a domain that is not one comes back as it was. */
export function unicodeDomain(domain: string): string {
  const ascii = domainToASCII(domain);
  return ascii ? domainToUnicode(ascii) : domain.normalize('NFC');
}

/** The A-label (punycode) form of a domain, what DNS is asked for; '' when it is not a domain name. */
export const asciiDomain = (domain: string): string => (isAscii(domain) ? domain : domainToASCII(domain));

/**
 * An address as it goes into an SMTP envelope: an ASCII local part with its domain's A-labels,
 * which needs no SMTPUTF8 (RFC 6531 §3.2 permits it); a UTF-8 local part as it is.
 */
export function envelopeAddress(address: string): string {
  const { localPart, domain } = splitAddress(address);
  return isAscii(localPart) ? `${localPart}@${asciiDomain(domain) || domain}` : address;
}

export function splitAddress(address: string): { localPart: string; domain: string } {
  const at = address.lastIndexOf('@');
  return { localPart: address.slice(0, at), domain: address.slice(at + 1) };
}

/** Parses a caller-supplied mailboxAddress; invalid is a 400 (spec Errors table). */
export function parseMailboxAddress(value: string): string {
  const normalized = normalizeAddress(value);
  if (!isAddress(normalized)) throw new AppError('MAILBOX_ADDRESS_INVALID');
  return normalized;
}

export const addressSchema = z
  .string()
  .max(320)
  .transform(normalizeAddress)
  .refine(isAddress, { message: 'must be an e-mail address such as agent@example.test' });
