import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

function base32(bytes: Uint8Array, length: number): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < length) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

/**
 * Opaque ids with a type prefix (`msg_…`): 10 chars of millisecond time then 16 random chars
 * (80 bits), so ids sort by creation and never collide across replicas.
 */
export function newId(prefix: string, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return `${prefix}_${time}${base32(randomBytes(10), 16)}`;
}

export const ID_PREFIX = {
  domain: 'dom',
  mailbox: 'mbx',
  alias: 'als',
  identity: 'sid',
  token: 'tok',
  thread: 'thr',
  message: 'msg',
  recipient: 'rcp',
  attachment: 'att',
  job: 'job',
} as const;
