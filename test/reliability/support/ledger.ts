import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// The durability ledger: what every client was told, recorded the moment it was told.
// The database is judged against it afterwards; nothing here reads the database.

export type Channel = 'smtp' | 'api';

/**
 * One try at submitting a ledger entry. `sent` means the complete message reached the wire
 * (SMTP: the final dot; HTTP: the request was written), so the server may have stored it.
 */
export interface Attempt {
  n: number;
  /** When the message was completely sent, or null when the try failed before that. */
  sentAt: number | null;
  outcome: 'acknowledged' | 'refused' | 'unanswered' | 'not-sent';
  /** The reply that ended the try (`250 2.0.0 Queued as …`, `503 …`), if any. */
  reply?: string;
  repliedAt?: number;
  /** SMTP: sha256 of the exact raw message of this try (its X-Ledger-Attempt header differs per try). */
  rawSha256?: string;
  /** Why a try ended without a reply (connection refused or closed, timeout), and when. */
  error?: string;
  failedAt?: number;
}

export interface Entry {
  id: string;
  channel: Channel;
  client: number;
  mailbox: string;
  recipients: string[];
  /** sha256 of the text body the stored message must carry (what the parser gives back for what was sent). */
  bodySha256: string;
  /** sha256 of the attachment the message carries, if any. */
  attachmentSha256: string | null;
  attempts: Attempt[];
  ack: { messageId: string; at: number; attempt: number } | null;
}

/** Every reply a client received, for the PostgreSQL-down window. */
export interface ReplyRecord {
  channel: Channel;
  /** SMTP: the command answered (greeting, ehlo, auth, mail, rcpt, data, end); HTTP: send. */
  stage: string;
  sentAt: number;
  at: number;
  /** SMTP reply code or HTTP status. */
  code: number;
  /** SMTP: the reply line; HTTP: `envelope <code> <errMsg>` or `non-envelope <first bytes>`. */
  text: string;
  envelope: boolean;
}

export interface Window {
  from: number;
  to: number;
}

export class Ledger {
  readonly entries = new Map<string, Entry>();
  readonly replies: ReplyRecord[] = [];
  /** Periods during which PostgreSQL was completely stopped (stopImmediate done, start not yet called). */
  readonly down: Window[] = [];
  acks = 0;
  private readonly file: string;

  constructor(name: string) {
    this.file = path.resolve(import.meta.dirname, '../../../test-results', `${name}.jsonl`);
    mkdirSync(path.dirname(this.file), { recursive: true });
    writeFileSync(this.file, '');
  }

  add(entry: Omit<Entry, 'attempts' | 'ack'>): Entry {
    const full: Entry = { ...entry, attempts: [], ack: null };
    this.entries.set(entry.id, full);
    return full;
  }

  /** Appended to the ledger file at once, so the evidence does not depend on this process surviving. */
  acknowledge(entry: Entry, attempt: Attempt, messageId: string, reply: string): void {
    const at = Date.now();
    attempt.outcome = 'acknowledged';
    attempt.reply = reply;
    attempt.repliedAt = at;
    entry.ack = { messageId, at, attempt: attempt.n };
    this.acks++;
    appendFileSync(
      this.file,
      `${JSON.stringify({ id: entry.id, channel: entry.channel, messageId, attempt: attempt.n, bodySha256: entry.bodySha256, rawSha256: attempt.rawSha256 ?? null, at })}\n`,
    );
  }

  reply(record: ReplyRecord): void {
    this.replies.push(record);
  }

  /** Every reply and the down windows, next to the acknowledgements, for reading a run afterwards. */
  dumpReplies(): void {
    writeFileSync(
      this.file.replace(/\.jsonl$/, '-replies.json'),
      JSON.stringify({
        down: this.down,
        replies: this.replies,
        retried: [...this.entries.values()].filter((e) => e.attempts.length > 1),
      }),
    );
  }

  isDown(t: number): boolean {
    return this.down.some((w) => t >= w.from && t <= w.to);
  }

  /** True when the whole exchange (sent and answered) lies inside one down window. */
  sentAndAnsweredWhileDown(sentAt: number, at: number): boolean {
    return this.down.some((w) => sentAt >= w.from && at <= w.to);
  }

  async waitForAcks(count: number, deadline: number): Promise<void> {
    while (this.acks < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }
}
