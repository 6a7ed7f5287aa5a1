import type { SenderAtMailFrom } from './sender-identity.store.js';

/**
 * MAIL FROM's read (sender identity, quota, policy layers: `senderAtMailFrom`) per SMTP session,
 * reused by the session's next MAIL FROM of the same address for `ttlMs` (AUTH_CACHE_TTL, 500 ms):
 * the same freshness as the token re-check those MAIL FROMs make (the auth cache). A client
 * sending one message after another on a warm session pays one read per TTL instead of one round
 * trip per message (bench/smtp, docs/api.md "Queued submission on 587"). Only a read that let the
 * transaction go on is kept, and a refusal at end of DATA forgets it, so a mailbox that filled up
 * or a rule that refused is read again at the next MAIL FROM. What end of DATA decides is read
 * there afresh either way (the outbound policy, the From identities other than MAIL FROM).
 */
export class SenderReadCache<Session extends object> {
  private readonly reads = new WeakMap<Session, { address: string; readAt: number; read: SenderAtMailFrom }>();

  constructor(private readonly ttlMs: number) {}

  get(session: Session, address: string): SenderAtMailFrom | undefined {
    const entry = this.reads.get(session);
    if (!entry || entry.address !== address) return undefined;
    if (performance.now() - entry.readAt >= this.ttlMs) {
      this.reads.delete(session);
      return undefined;
    }
    return entry.read;
  }

  /** Keeps `read`, taken at `readAt` (performance.now() before the query), if it let MAIL FROM pass. */
  remember(session: Session, address: string, read: SenderAtMailFrom, readAt: number): void {
    if (this.ttlMs > 0 && read.identity && !read.full) this.reads.set(session, { address, readAt, read });
    else this.reads.delete(session);
  }

  forget(session: Session): void {
    this.reads.delete(session);
  }
}
