import { createHash } from 'node:crypto';
import { SmtpWire } from '../../smtp/smtp-wire.js';
import type { Attempt, Entry, Ledger } from './ledger.js';

// Submitting clients for the durability harness: SMTP submission (real STARTTLS, AUTH PLAIN
// with a mailbox token) and POST /api/messages/send. They behave like real clients: a refused
// or failed submission is retried until it is acknowledged, with a short backoff.

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Deterministic per id: a line starting with a dot (dot-stuffing), non-ASCII text, pseudo-random filler. */
export function bodyOf(id: string): string {
  const filler: string[] = [];
  let seed = sha256(id);
  for (let i = 0; i < 4; i++) {
    seed = sha256(seed);
    filler.push(Buffer.from(seed, 'hex').toString('base64') + seed.slice(0, 20));
  }
  return [`ledger ${id}`, '.a line that starts with a dot', 'Grüße ✓ 日本語', '', ...filler, '-- ', 'end'].join('\n');
}

/** The attachment some SMTP messages carry (binary, deterministic per id). */
export function attachmentOf(id: string): Buffer {
  const parts: Buffer[] = [];
  let seed = sha256(`att:${id}`);
  for (let i = 0; i < 24; i++) {
    seed = sha256(seed);
    parts.push(Buffer.from(seed, 'hex'));
  }
  return Buffer.concat(parts);
}

export interface Submission {
  entry: Entry;
  from: string;
  /** SMTP only: multipart with an attachment. */
  multipart: boolean;
}

/** The exact bytes of one SMTP try, and the text body mailparser gives back for it. */
export function smtpMessage(s: Submission, attempt: number): { raw: string; text: string } {
  const { entry } = s;
  const body = bodyOf(entry.id).replace(/\n/g, '\r\n');
  const headers = [
    `From: <${s.from}>`,
    `To: <${entry.recipients[0]}>`,
    `Subject: ledger ${entry.id}`,
    'Date: Mon, 02 Nov 2026 10:00:00 +0000',
    `Message-ID: <${entry.id}@ledger.test>`,
    `X-Ledger-Id: ${entry.id}`,
    `X-Ledger-Attempt: ${attempt}`,
    'MIME-Version: 1.0',
  ];
  if (!s.multipart) {
    // The final CRLF belongs to the body (RFC 5322), so the stored text ends with a newline.
    return {
      raw: [
        ...headers,
        'Content-Type: text/plain; charset=utf-8',
        'Content-Transfer-Encoding: 8bit',
        '',
        body,
        '',
      ].join('\r\n'),
      text: `${bodyOf(entry.id)}\n`,
    };
  }
  const b64 = attachmentOf(entry.id).toString('base64').replace(/.{76}/g, '$&\r\n');
  return {
    raw: [
      ...headers,
      'Content-Type: multipart/mixed; boundary="ledger-boundary"',
      '',
      '--ledger-boundary',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      body,
      '--ledger-boundary',
      `Content-Type: application/octet-stream`,
      `Content-Disposition: attachment; filename="${entry.id}.bin"`,
      'Content-Transfer-Encoding: base64',
      '',
      b64,
      '--ledger-boundary--',
      '',
    ].join('\r\n'),
    // The CRLF before a boundary belongs to the boundary (RFC 2046 §5.1.1): no trailing newline.
    text: bodyOf(entry.id),
  };
}

export const expectedText = (s: Submission): string =>
  s.entry.channel === 'api' ? bodyOf(s.entry.id) : smtpMessage(s, 1).text;

export interface ClientOptions {
  ledger: Ledger;
  /** Stop retrying after this moment (the run's deadline). */
  deadline: number;
}

const backoff = (tries: number) => Math.min(1000, 50 * 2 ** Math.min(tries, 5)) * (0.5 + Math.random() / 2);

class Transient extends Error {}

/** One SMTP client: one session reused across messages, re-established after any failure. */
export class SmtpClient {
  private wire: SmtpWire | null = null;

  constructor(
    private readonly port: number,
    private readonly user: string,
    private readonly token: string,
    private readonly o: ClientOptions,
  ) {}

  private async step(stage: string, line: string | null, expect: number, timeoutMs = 30_000): Promise<string> {
    const wire = this.wire!;
    const sentAt = Date.now();
    if (line !== null) wire.write(`${line}\r\n`);
    const r = await wire.reply(timeoutMs);
    this.o.ledger.reply({ channel: 'smtp', stage, sentAt, at: Date.now(), code: r.code, text: r.last, envelope: true });
    if (r.code !== expect) throw new Transient(r.last);
    return r.last;
  }

  private async session(): Promise<void> {
    if (this.wire) return;
    this.wire = await SmtpWire.connect(this.port, null);
    await this.step('greeting', null, 220);
    await this.step('ehlo', 'EHLO ledger.test', 250);
    await this.wire.starttls(); // sends STARTTLS and expects 220 itself
    await this.step('ehlo', 'EHLO ledger.test', 250);
    await this.step('auth', `AUTH PLAIN ${Buffer.from(`\0${this.user}\0${this.token}`).toString('base64')}`, 235);
  }

  private drop(): void {
    this.wire?.close();
    this.wire = null;
  }

  /** Submits until acknowledged (or the deadline). */
  async submit(s: Submission): Promise<void> {
    for (let n = 1; !s.entry.ack && Date.now() < this.o.deadline; n++) {
      const { raw } = smtpMessage(s, n);
      const attempt: Attempt = { n, sentAt: null, outcome: 'not-sent', rawSha256: sha256(raw) };
      s.entry.attempts.push(attempt);
      try {
        await this.session();
        await this.step('mail', `MAIL FROM:<${s.from}>`, 250);
        for (const r of s.entry.recipients) await this.step('rcpt', `RCPT TO:<${r}>`, 250);
        await this.step('data', 'DATA', 354);
        // Dot-stuffing (RFC 5321 §4.5.2), then the terminating dot.
        this.wire!.write(`${raw.replace(/^\./gm, '..')}.\r\n`);
        attempt.sentAt = Date.now();
        attempt.outcome = 'unanswered';
        const reply = await this.step('end', null, 250);
        const messageId = /Queued as (msg_\w+)/.exec(reply)?.[1];
        if (!messageId) throw new Error(`250 without a message id: ${reply}`);
        this.o.ledger.acknowledge(s.entry, attempt, messageId, reply);
      } catch (err) {
        if (!(err instanceof Transient)) {
          attempt.error = String((err as Error).message ?? err).slice(0, 200);
          attempt.failedAt = Date.now();
        }
        if (err instanceof Transient && attempt.outcome === 'unanswered') {
          attempt.outcome = 'refused';
          attempt.reply = err.message;
          attempt.repliedAt = Date.now();
        }
        // A refusal leaves the session usable, but a fresh one after any failure is what most
        // clients do, and it also covers a connection the server dropped.
        this.drop();
        await sleep(backoff(n));
      }
    }
  }

  close(): void {
    this.drop();
  }
}

/** One HTTP client: POST /api/messages/send with the ledger id as Idempotency-Key. */
export class ApiClient {
  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly o: ClientOptions,
  ) {}

  async submit(s: Submission): Promise<void> {
    const body = JSON.stringify({
      toAddress: [s.entry.recipients[0]],
      ccAddresses: s.entry.recipients.slice(1),
      subject: `ledger ${s.entry.id}`,
      bodyText: bodyOf(s.entry.id),
    });
    for (let n = 1; !s.entry.ack && Date.now() < this.o.deadline; n++) {
      const attempt: Attempt = { n, sentAt: null, outcome: 'not-sent' };
      s.entry.attempts.push(attempt);
      const sentAt = Date.now();
      try {
        attempt.sentAt = sentAt;
        attempt.outcome = 'unanswered';
        const res = await fetch(`${this.url}/api/messages/send`, {
          method: 'POST',
          body,
          signal: AbortSignal.timeout(30_000),
          headers: {
            authorization: `Bearer ${this.token}`,
            'content-type': 'application/json',
            'idempotency-key': s.entry.id,
          },
        });
        const text = await res.text();
        let envelope: { code?: unknown; errMsg?: unknown; data?: { messageId?: string } } | null = null;
        try {
          envelope = JSON.parse(text);
        } catch {
          envelope = null;
        }
        const isEnvelope =
          envelope !== null &&
          typeof envelope === 'object' &&
          envelope.code === res.status &&
          'errMsg' in envelope &&
          'tid' in envelope;
        this.o.ledger.reply({
          channel: 'api',
          stage: 'send',
          sentAt,
          at: Date.now(),
          code: res.status,
          envelope: isEnvelope,
          text: isEnvelope
            ? `envelope ${res.status} ${String(envelope!.errMsg)}`
            : `non-envelope ${text.slice(0, 120)}`,
        });
        if (res.status === 202 && isEnvelope && envelope!.data?.messageId) {
          this.o.ledger.acknowledge(s.entry, attempt, envelope!.data.messageId, `202 ${envelope!.data.messageId}`);
          return;
        }
        attempt.outcome = 'refused';
        attempt.reply = `${res.status} ${text.slice(0, 200)}`;
        attempt.repliedAt = Date.now();
      } catch (err) {
        attempt.error =
          `${(err as Error).message} ${String((err as { cause?: { code?: string } }).cause?.code ?? '')}`.slice(0, 200);
        attempt.failedAt = Date.now();
        // Refused before a byte was written: the server cannot have seen it.
        if ((err as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED') {
          attempt.outcome = 'not-sent';
          attempt.sentAt = null;
        }
      }
      await sleep(backoff(n));
    }
  }
}
