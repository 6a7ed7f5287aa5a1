import { z } from 'zod';
import { AppError } from './errors.js';

// A pragmatic RFC 5321 subset: dot-atom local part, LDH domain labels. Quoted local parts,
// source routes and address literals are refused on purpose (open-relay tricks).
const ADDRESS_RE =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]{0,61}[A-Za-z0-9]$/;
const DOMAIN_RE = /^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]{0,61}[A-Za-z0-9]$/;

export function isAddress(value: string): boolean {
  if (value.length > 320) return false;
  const at = value.lastIndexOf('@');
  return at > 0 && at <= 64 && ADDRESS_RE.test(value);
}

export const isDomainName = (value: string): boolean => value.length <= 253 && DOMAIN_RE.test(value);

/** Addresses are stored and compared lower-cased (hosted local parts are case-insensitive here). */
export const normalizeAddress = (value: string): string => value.trim().toLowerCase();

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
