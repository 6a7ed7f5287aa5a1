import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Entry, Ledger } from './ledger.js';

// Judges the database against the ledger after a durability run. Definitions (docs/api.md,
// Durability):
// - lost: an acknowledged message id that is not stored, or stored as another ledger entry.
// - wrong hash: a stored message of a ledger entry whose text body, raw message (SMTP: the exact
//   bytes of the try it came from) or attachment (row sha256 and blob bytes) differ from what was sent.
// - duplicate: a stored copy of an entry that no unacknowledged try explains. A try whose end was
//   sent but whose reply never arrived may legitimately be stored (the client could not know), and
//   so may one answered 451 4.3.0 because the database connection broke during its COMMIT (the
//   server could not know). Any other refusal must mean "not stored".
// - partial rows: any part of the one send transaction without the rest (see PARTIAL below).

const sha256 = (data: string | Buffer | Uint8Array) => createHash('sha256').update(data).digest('hex');

export interface Verdict {
  stored: number;
  lost: number;
  wrongHash: number;
  duplicates: number;
  /** Copies of unanswered tries (informational: allowed). */
  unansweredStoredTwice: number;
  /**
   * Copies of tries answered `451 4.3.0 Temporary storage failure` (informational: allowed). The
   * connection to PostgreSQL broke during the COMMIT, so the server could not know it landed.
   */
  storageFailureStoredTwice: number;
  /** Copies of tries answered with any other refusal: a definite refusal must mean "not stored". */
  storedAfterRefusal: number;
  /** Stored API copies beyond one per Idempotency-Key. */
  apiStoredTwice: number;
  /** Messages no ledger entry explains. */
  unknownMessages: number;
  partial: Record<string, number>;
  partialRows: number;
}

export interface BlobVerdict {
  orphanBlobs: number;
  missingBlobs: number;
  unclaimedAttachments: number;
}

/**
 * Every part of one send that must exist with the others, as SQL returning offending ids.
 * Foreign keys already forbid some; they are counted anyway, the check should not trust the schema.
 */
const PARTIAL: Record<string, string> = {
  'message without recipients': `select m.id from message m where not exists (select 1 from message_recipient r where r.message_id = m.id)`,
  'outbound message without outbox job': `select m.id from message m where m.direction = 'outbound' and not exists (select 1 from outbox_job j where j.message_id = m.id)`,
  'message without its message.sent event': `select m.id from message m left join (select payload->'data'->>'messageId' as mid from mailbox_event where type = 'message.sent') e on e.mid = m.id where m.direction = 'outbound' and e.mid is null`,
  'message without thread': `select m.id from message m where not exists (select 1 from thread t where t.id = m.thread_id)`,
  'attachment_count differs from its attachments': `select m.id from message m where m.attachment_count <> (select count(*) from attachment a where a.message_id = m.id)`,
  'recipient without message': `select r.id from message_recipient r where not exists (select 1 from message m where m.id = r.message_id)`,
  'outbox job without message': `select j.id from outbox_job j where not exists (select 1 from message m where m.id = j.message_id)`,
  'attachment of a missing message': `select a.id from attachment a where a.message_id is not null and not exists (select 1 from message m where m.id = a.message_id)`,
  'mailbox outbound_count differs from its messages': `select b.id from mailbox b where b.outbound_count <> (select count(*) from message m where m.mailbox_id = b.id and m.direction = 'outbound')`,
  'mailbox event_seq differs from its event log': `select b.id from mailbox b where b.event_seq <> (select count(*) from mailbox_event e where e.mailbox_id = b.id)`,
};

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export async function verifyMessages(url: string, ledger: Ledger): Promise<Verdict> {
  return withClient(url, async (c) => {
    const messages = (
      await c.query<{ id: string; subject: string; body_text: string | null; raw_blob_key: string | null }>(
        `select id, subject, body_text, raw_blob_key from message`,
      )
    ).rows;
    const blobs = new Map(
      (
        await c.query<{ key: string; data: Buffer }>(
          // Chunked blobs (pg-blob-store.ts) reassembled; rows written before chunking keep their data.
          `select b.key, coalesce(b.data, (select string_agg(c.data, ''::bytea order by c.seq) from blob_chunk c where c.key = b.key), ''::bytea) as data from blob b`,
        )
      ).rows.map((r) => [r.key, r.data]),
    );
    const attachments = new Map<string, { sha256: string; blob_key: string }[]>();
    for (const a of (
      await c.query<{ message_id: string; sha256: string; blob_key: string }>(
        `select message_id, sha256, blob_key from attachment where message_id is not null`,
      )
    ).rows) {
      attachments.set(a.message_id, [...(attachments.get(a.message_id) ?? []), a]);
    }
    const recipients = new Map(
      (
        await c.query<{ message_id: string; n: number }>(
          `select message_id, count(*)::int as n from message_recipient group by message_id`,
        )
      ).rows.map((r) => [r.message_id, r.n]),
    );

    const v: Verdict = {
      stored: messages.length,
      lost: 0,
      wrongHash: 0,
      duplicates: 0,
      unansweredStoredTwice: 0,
      storageFailureStoredTwice: 0,
      storedAfterRefusal: 0,
      apiStoredTwice: 0,
      unknownMessages: 0,
      partial: {},
      partialRows: 0,
    };
    const byEntry = new Map<string, typeof messages>();
    for (const m of messages) {
      const id = /^ledger (\S+)$/.exec(m.subject)?.[1];
      if (!id || !ledger.entries.has(id)) {
        v.unknownMessages++;
        continue;
      }
      byEntry.set(id, [...(byEntry.get(id) ?? []), m]);
    }
    let recipientMismatch = 0;
    for (const entry of ledger.entries.values()) {
      const rows = byEntry.get(entry.id) ?? [];
      if (entry.ack && !rows.some((r) => r.id === entry.ack!.messageId)) v.lost++;
      for (const row of rows) {
        if (!hashesMatch(entry, row, blobs, attachments.get(row.id) ?? [])) v.wrongHash++;
        if ((recipients.get(row.id) ?? 0) !== entry.recipients.length) recipientMismatch++;
      }
      judgeCopies(entry, rows, blobs, v);
    }
    for (const [name, query] of Object.entries(PARTIAL)) v.partial[name] = (await c.query(query)).rowCount ?? 0;
    v.partial['recipient count differs from what was submitted'] = recipientMismatch;
    v.partialRows = Object.values(v.partial).reduce((a, b) => a + b, 0);
    return v;
  });
}

/** Text body, raw bytes of the try (SMTP) and attachment (row hash and blob bytes). */
function hashesMatch(
  entry: Entry,
  row: { body_text: string | null; raw_blob_key: string | null },
  blobs: Map<string, Buffer>,
  atts: { sha256: string; blob_key: string }[],
): boolean {
  if (sha256(row.body_text ?? '') !== entry.bodySha256) return false;
  if (entry.channel === 'smtp') {
    const raw = row.raw_blob_key ? blobs.get(row.raw_blob_key) : undefined;
    // A missing blob is counted as such (verifyBlobs), not as a wrong hash.
    if (raw && !entry.attempts.some((a) => a.rawSha256 === sha256(raw))) return false;
  }
  if (entry.attachmentSha256 === null) return atts.length === 0;
  if (atts.length !== 1 || atts[0]!.sha256 !== entry.attachmentSha256) return false;
  const data = blobs.get(atts[0]!.blob_key);
  return !data || sha256(data) === entry.attachmentSha256;
}

/** Which try each stored copy came from, and whether that try's outcome allows a copy. */
function judgeCopies(
  entry: Entry,
  rows: { id: string; raw_blob_key: string | null }[],
  blobs: Map<string, Buffer>,
  v: Verdict,
): void {
  const extra = rows.filter((r) => r.id !== entry.ack?.messageId);
  if (extra.length === 0) return;
  if (entry.channel === 'api') {
    // Every try carries the same Idempotency-Key: any second copy is a failure of it.
    v.apiStoredTwice += entry.ack ? extra.length : extra.length - 1;
  }
  const unanswered = entry.attempts.filter((a) => a.outcome === 'unanswered');
  if (entry.channel === 'api') {
    const allowed = Math.min(entry.ack ? extra.length : extra.length - 1, unanswered.length);
    v.unansweredStoredTwice += allowed;
    v.duplicates += Math.max(0, (entry.ack ? extra.length : extra.length - 1) - allowed);
    return;
  }
  // SMTP: the raw message names its try (X-Ledger-Attempt).
  const seen = new Set<number>();
  for (const row of extra) {
    const raw = row.raw_blob_key ? blobs.get(row.raw_blob_key)?.toString('utf8') : undefined;
    const n = Number(/^X-Ledger-Attempt: (\d+)\r$/m.exec(raw ?? '')?.[1] ?? NaN);
    const attempt = entry.attempts.find((a) => a.n === n);
    if (!attempt || seen.has(n)) {
      v.duplicates++;
      continue;
    }
    seen.add(n);
    if (attempt.outcome === 'unanswered') v.unansweredStoredTwice++;
    else if (attempt.outcome === 'refused' && attempt.reply?.startsWith('451 4.3.0 Temporary storage failure'))
      v.storageFailureStoredTwice++;
    else if (attempt.outcome === 'refused') v.storedAfterRefusal++;
    else if (attempt.outcome === 'acknowledged' || attempt.outcome === 'not-sent') v.duplicates++;
  }
}

/** Blobs no row names, rows naming a missing blob, uploads never claimed. */
export async function verifyBlobs(url: string): Promise<BlobVerdict> {
  return withClient(url, async (c) => {
    const q = async (text: string) => Number((await c.query<{ n: string }>(text)).rows[0]!.n);
    return {
      orphanBlobs:
        await q(`select count(*) as n from blob b where not exists (select 1 from message m where m.raw_blob_key = b.key)
        and not exists (select 1 from attachment a where a.blob_key = b.key)`),
      missingBlobs:
        await q(`select count(*) as n from (select raw_blob_key as key from message where raw_blob_key is not null
        union all select blob_key from attachment) r where not exists (select 1 from blob b where b.key = r.key)`),
      unclaimedAttachments: await q(`select count(*) as n from attachment where message_id is null`),
    };
  });
}
