import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ApprovalCredentials } from '../../src/core/access/approval-credential.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';

// The approval link's credential (src/core/access/approval-credential.ts): minted for one message,
// opened only with the key that minted it and only in its canonical spelling.

const key = randomBytes(32);
const credentials = new ApprovalCredentials(key);
const messageId = newId(ID_PREFIX.message);

describe('approval link credentials', () => {
  it('open to their message and the hash of their secret, which the credential does not contain', () => {
    const { credential, secretHash } = credentials.mint(messageId);
    expect(credential).toMatch(/^msg_[0-9a-z]{26}\.[A-Za-z0-9_-]{32}\.[A-Za-z0-9_-]{43}$/);
    expect(credentials.open(credential)).toEqual({ messageId, secretHash });
    expect(credential).not.toContain(secretHash);
    expect(credentials.mint(messageId).credential).not.toBe(credential);
  });

  it('refuse any changed character, another message id, another key and malformed input', () => {
    const { credential } = credentials.mint(messageId);
    for (let i = 0; i < credential.length; i++) {
      if (credential[i] === '.') continue;
      const swap = credential[i] === 'a' ? 'b' : 'a';
      expect(credentials.open(credential.slice(0, i) + swap + credential.slice(i + 1)), `position ${i}`).toBeNull();
    }
    const [, random, signature] = credential.split('.');
    expect(credentials.open(`${newId(ID_PREFIX.message)}.${random}.${signature}`)).toBeNull();
    expect(new ApprovalCredentials(randomBytes(32)).open(credential)).toBeNull();
    for (const bad of ['', 'x', `${credential}.`, ` ${credential}`, credential.replaceAll('.', ':'), `${credential}A`])
      expect(credentials.open(bad)).toBeNull();
  });

  it('take only the canonical base64url of the signature (its spare low bits are not a second spelling)', () => {
    const { credential } = credentials.mint(messageId);
    const last = credential.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const i = alphabet.indexOf(last);
    // Same high four bits, other spare bits: decodes to the same 32 bytes.
    const sibling = alphabet[(i & ~3) | ((i + 1) & 3)]!;
    expect(Buffer.from(credential.slice(-43), 'base64url')).toEqual(
      Buffer.from(credential.slice(-43, -1) + sibling, 'base64url'),
    );
    expect(credentials.open(credential.slice(0, -1) + sibling)).toBeNull();
  });
});
