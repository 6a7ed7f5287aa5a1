import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The server key: from MAILBOX_SECRET_KEY, or generated once into `<data dir>/server.key`
 * (mode 0600) for the embedded default. Sub-keys are derived per purpose so the cursor HMAC
 * and the token cipher never share a key.
 */
export function loadServerKey(configured: string | undefined, dataDir: string): Buffer {
  if (configured) return parseServerKey(configured);
  const file = path.join(dataDir, 'server.key');
  if (existsSync(file)) return parseServerKey(readFileSync(file, 'utf8'));
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}

export const deriveKey = (master: Buffer, purpose: string): Buffer =>
  createHmac('sha256', master).update(`mailbox-service:${purpose}`).digest();

/** Accepts a 32-byte key as 64 hex chars or base64. */
export function parseServerKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32) throw new Error('MAILBOX_SECRET_KEY must be 32 bytes, as 64 hex chars or base64');
  return key;
}
