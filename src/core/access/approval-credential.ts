import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** 192 random bits: the secret part, which the server keeps only as a SHA-256. */
const RANDOM_BYTES = 24;
const B64URL = '[A-Za-z0-9_-]';
// msg_ + 26 Crockford base32 characters (ids.ts), then the random part, then the HMAC-SHA256.
const FORMAT = new RegExp(`^(msg_[0-9a-z]{26})\\.(${B64URL}{32})\\.(${B64URL}{43})$`);

/** What a well-formed, correctly signed credential names: its message, and the hash its row is found by. */
export interface OpenedCredential {
  messageId: string;
  secretHash: string;
}

/**
 * The one-time credential of an approval link (docs/workflow.md, "Approval links"):
 * `<messageId>.<random>.<signature>`, the signature an HMAC-SHA256 over the message id and the
 * random part under a key derived from the server key. A credential is opened in two steps: its
 * signature here (in constant time, no storage read: a guessed or altered credential costs
 * nothing), then its row by the random part's SHA-256 *and* the signed message id, so a
 * credential can only ever name the one message it was minted for.
 */
export class ApprovalCredentials {
  constructor(private readonly key: Buffer) {}

  mint(messageId: string): { credential: string; secretHash: string } {
    const random = randomBytes(RANDOM_BYTES).toString('base64url');
    return {
      credential: `${messageId}.${random}.${this.sign(messageId, random).toString('base64url')}`,
      secretHash: secretHashOf(random),
    };
  }

  /** The credential's message and secret hash; null when it is malformed or its signature is wrong. */
  open(credential: string): OpenedCredential | null {
    const m = FORMAT.exec(credential);
    if (!m) return null;
    const [, messageId, random, signature] = m as unknown as [string, string, string, string];
    // Compared as text: base64url's last character carries two spare bits, so two spellings of one
    // signature would decode alike; only the canonical one is the credential.
    const given = Buffer.from(signature);
    const expected = Buffer.from(this.sign(messageId, random).toString('base64url'));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    return { messageId, secretHash: secretHashOf(random) };
  }

  private sign(messageId: string, random: string): Buffer {
    return createHmac('sha256', this.key).update(`approval-link:v1\n${messageId}\n${random}`).digest();
  }
}

const secretHashOf = (random: string): string => createHash('sha256').update(random).digest('hex');
