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

let lastTime = -1;
let lastRandom: Buffer = Buffer.alloc(10);

// Random bytes are drawn 4 KiB at a time, as node's randomUUID batches its entropy: one
// randomBytes call costs ~4.5 µs here against ~0.1 µs for a slice of the pool (several ids a message).
// A slice is a view, never written: randomPart counts up in a copy.
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function freshRandom(size: number): Buffer {
  if (poolOffset + size > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  return pool.subarray(poolOffset, (poolOffset += size));
}

/** The 80-bit random part: fresh, or the previous one plus one within the same millisecond. */
function randomPart(now: number): Buffer {
  if (now === lastTime) {
    const next = Buffer.from(lastRandom);
    for (let i = next.length - 1; i >= 0 && ++next[i]! === 256; i--) next[i] = 0;
    lastRandom = next;
  } else {
    lastTime = now;
    lastRandom = freshRandom(10);
  }
  return lastRandom;
}

/**
 * Opaque ids with a type prefix (`msg_…`): 10 chars of millisecond time then 16 random chars
 * (80 bits), so ids sort by creation and never collide across replicas. Within one millisecond a
 * process counts up from its last random part (monotonic ULIDs), so rows made together, such as
 * the attachments of one message, sort in the order they were made.
 */
export function newId(prefix: string, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return `${prefix}_${time}${base32(randomPart(now), 16)}`;
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
  audit: 'aud',
  webhook: 'whk',
  queuedInbound: 'inq',
  eventSubscription: 'evs',
  draft: 'drf',
} as const;
