import { hash, randomBytes } from 'node:crypto';
import type { TokenKind } from './scopes.js';

// mbxm_ / mbxd_ + 32 base62 chars (190 bits) + 6 base62 chars of CRC32. The prefix makes a
// leaked token recognisable to secret scanners; the checksum refuses typos without a query.
const KIND_PREFIX: Record<TokenKind, string> = { mailbox: 'mbxm_', domain: 'mbxd_' };
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_CHARS = 32;
const CHECK_CHARS = 6;
const TOKEN_RE = /^mbx([md])_([0-9A-Za-z]{38})$/;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(text: string): number {
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) crc = CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function base62Fixed(value: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62]; // 248 = 4*62: no modulo bias
    }
  }
  return out;
}

export function mintTokenPlaintext(kind: TokenKind): string {
  const body = KIND_PREFIX[kind] + randomBase62(RANDOM_CHARS);
  return body + base62Fixed(crc32(body), CHECK_CHARS);
}

/** Returns the token's kind when the format and checksum hold, else null (no database needed). */
export function checkTokenFormat(plaintext: string): TokenKind | null {
  const m = TOKEN_RE.exec(plaintext);
  if (!m) return null;
  const body = plaintext.slice(0, plaintext.length - CHECK_CHARS);
  if (base62Fixed(crc32(body), CHECK_CHARS) !== plaintext.slice(-CHECK_CHARS)) return null;
  return m[1] === 'm' ? 'mailbox' : 'domain';
}

export const hashToken = (plaintext: string): string => hash('sha256', plaintext);

/** The displayable start of a token (kind prefix + 7 chars), enough to recognise it in a list. */
export const tokenDisplayPrefix = (plaintext: string): string => plaintext.slice(0, 12);
