import { describe, expect, it } from 'vitest';
import {
  checkTokenFormat,
  hashToken,
  mintTokenPlaintext,
  tokenDisplayPrefix,
} from '../../src/core/access/token-format.js';
import { parseServerKey } from '../../src/core/base/keys/server-key.js';
import { TokenCipher } from '../../src/core/access/token-cipher.js';
import { randomBytes } from 'node:crypto';

describe('token format', () => {
  it('mints recognisable tokens per kind with at least 128 bits of randomness', () => {
    const m = mintTokenPlaintext('mailbox');
    const d = mintTokenPlaintext('domain');
    expect(m).toMatch(/^mbxm_[0-9A-Za-z]{38}$/);
    expect(d).toMatch(/^mbxd_[0-9A-Za-z]{38}$/);
    // 32 base62 characters of randomness: 32 * log2(62) ≈ 190 bits.
    expect(32 * Math.log2(62)).toBeGreaterThan(128);
    expect(checkTokenFormat(m)).toBe('mailbox');
    expect(checkTokenFormat(d)).toBe('domain');
    const seen = new Set(Array.from({ length: 2000 }, () => mintTokenPlaintext('mailbox')));
    expect(seen.size).toBe(2000);
  });

  it('refuses every single-character typo by checksum, without a database', () => {
    const token = mintTokenPlaintext('mailbox');
    let refused = 0;
    let tried = 0;
    for (let i = 5; i < token.length; i++) {
      const swapped = token[i] === 'a' ? 'b' : 'a';
      const typo = token.slice(0, i) + swapped + token.slice(i + 1);
      tried++;
      if (checkTokenFormat(typo) === null) refused++;
    }
    expect(refused).toBe(tried);
    expect(checkTokenFormat(token.slice(0, -1))).toBeNull();
    expect(checkTokenFormat('Bearer ' + token)).toBeNull();
    expect(checkTokenFormat(token.replace('mbxm_', 'mbxd_'))).toBeNull();
  });

  it('hashes with SHA-256 and shows only a short prefix', () => {
    const token = mintTokenPlaintext('domain');
    expect(hashToken(token)).toMatch(/^[0-9a-f]{64}$/);
    expect(tokenDisplayPrefix(token)).toBe(token.slice(0, 12));
  });
});

describe('token cipher', () => {
  const cipher = new TokenCipher(randomBytes(32));

  it('round-trips and binds the ciphertext to its token id', () => {
    const sealed = cipher.encrypt('mbxm_secret', 'tok_1');
    expect(sealed).not.toContain('mbxm_secret');
    expect(cipher.decrypt(sealed, 'tok_1')).toBe('mbxm_secret');
    expect(() => cipher.decrypt(sealed, 'tok_2')).toThrow();
  });

  it('refuses a tampered ciphertext and a wrong key', () => {
    const sealed = cipher.encrypt('mbxm_secret', 'tok_1');
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[3]!, 'base64');
    ct[0] = ct[0]! ^ 1;
    parts[3] = ct.toString('base64');
    expect(() => cipher.decrypt(parts.join('.'), 'tok_1')).toThrow();
    expect(() => new TokenCipher(randomBytes(32)).decrypt(sealed, 'tok_1')).toThrow();
  });

  it('parses server keys as hex or base64 and refuses other lengths', () => {
    const key = randomBytes(32);
    expect(parseServerKey(key.toString('hex')).equals(key)).toBe(true);
    expect(parseServerKey(key.toString('base64')).equals(key)).toBe(true);
    expect(() => parseServerKey('abcd')).toThrow(/32 bytes/);
  });
});
