import nodemailer, { type Transporter } from 'nodemailer';
import type { SeededMailbox } from '../lib/scratch.js';
import { OP_CLASSES, type OpClass, type Recorder } from './stats.js';

// The soak's traffic: each operation class fires at a fixed rate (open loop: an operation starts
// when it is due, whether or not earlier ones have answered), against two API processes and one
// SMTP process. Latency is measured from the operation's start to its complete answer.

export type Rates = Record<OpClass, number>;

const OP_TIMEOUT_MS = 30_000;
/** Ids of a mailbox the soak has seen in a list answer, split so no id is read after it was deleted. */
interface Pool {
  keep: string[];
  doomed: string[];
  known: Set<string>;
}
const KEEP_MAX = 200;
const BODY = 'Soak traffic. '.repeat(100); // ~1.4 KB of text per message

export interface TrafficTargets {
  apiUrls: string[];
  submissionPort: number;
  mxPort: number;
  inboundFrom: string;
}

export class Traffic {
  private readonly pending = new Set<Promise<void>>();
  private readonly pools: Pool[];
  private readonly counters = Object.fromEntries(OP_CLASSES.map((c) => [c, 0])) as Record<OpClass, number>;
  private readonly submitters: Transporter[];
  private readonly inbound: Transporter;
  private readonly ops: Record<OpClass, (k: number) => (() => Promise<void>) | null>;

  constructor(
    private readonly rec: Recorder,
    private readonly t: TrafficTargets,
    private readonly mailboxes: SeededMailbox[],
  ) {
    this.pools = mailboxes.map(() => ({ keep: [], doomed: [], known: new Set() }));
    // Agents submit as themselves over 587 (STARTTLS + AUTH, pooled connections as a mail client keeps them).
    this.submitters = mailboxes.slice(0, 4).map((m) =>
      nodemailer.createTransport({
        pool: true,
        maxConnections: 2,
        host: '127.0.0.1',
        port: t.submissionPort,
        secure: false,
        requireTLS: true,
        tls: { rejectUnauthorized: false },
        auth: { user: m.address, pass: m.token },
        socketTimeout: OP_TIMEOUT_MS,
      }),
    );
    // The world writes to the MX listener (STARTTLS when offered, as an MTA does).
    this.inbound = nodemailer.createTransport({
      pool: true,
      maxConnections: 8,
      host: '127.0.0.1',
      port: t.mxPort,
      secure: false,
      name: 'mta.sender.bench',
      tls: { rejectUnauthorized: false },
      socketTimeout: OP_TIMEOUT_MS,
    });
    this.ops = {
      'http.list': (k) => () => this.list(k % mailboxes.length, k),
      'http.get': (k) => this.withKept(k, (m, id) => this.http(k, m, 'GET', `/api/messages/${id}`, 200)),
      'http.read-state': (k) =>
        this.withKept(k, (m, id) =>
          this.http(k, m, 'PUT', `/api/messages/${id}/read-state`, 200, { isRead: k % 2 === 0 }),
        ),
      'http.delete': (k) => {
        const m = k % mailboxes.length;
        const id = this.pools[m]!.doomed.shift();
        return id === undefined
          ? null
          : () => this.http(k, m, 'DELETE', `/api/messages/${id}`, 200).then(() => undefined);
      },
      'http.send': (k) => () =>
        this.http(k, k % mailboxes.length, 'POST', '/api/messages/send', 202, {
          toAddress: this.other(k % mailboxes.length, k).address,
          subject: `soak send ${k}`,
          bodyText: BODY,
        }).then(() => undefined),
      'smtp.submit': (k) => () => {
        const from = this.mailboxes[k % this.submitters.length]!;
        return this.submitters[k % this.submitters.length]!.sendMail({
          from: from.address,
          to: this.other(k % this.submitters.length, k).address,
          subject: `soak submit ${k}`,
          text: BODY,
        }).then(() => undefined);
      },
      'smtp.inbound': (k) => () =>
        this.inbound
          .sendMail({
            from: `News <${t.inboundFrom}>`,
            to: this.mailboxes[k % mailboxes.length]!.address,
            subject: `soak inbound ${k}`,
            text: BODY,
          })
          .then(() => undefined),
    };
  }

  /** Starts one operation of `cls` now, unless it has nothing to work on yet (counted as skipped). */
  fire(cls: OpClass): void {
    const k = this.counters[cls]++;
    const started = performance.now();
    const op = this.ops[cls](k);
    if (!op) {
      this.rec.skip(cls, started);
      return;
    }
    const p: Promise<void> = op()
      .then(
        () => this.rec.ok(cls, started),
        (err: Error) => this.rec.error(cls, started, err.message),
      )
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** Open loop: every class at its rate until `untilMs` (performance.now()); resolves when the last is due. */
  async run(rates: Rates, untilMs: number): Promise<void> {
    await Promise.all(
      OP_CLASSES.filter((c) => rates[c] > 0).map(async (cls) => {
        const start = performance.now();
        for (let n = 0; ; n++) {
          const due = start + (n * 1000) / rates[cls];
          if (due >= untilMs) return;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          this.rec.lagMs = Math.max(this.rec.lagMs, performance.now() - due);
          this.fire(cls);
        }
      }),
    );
  }

  /** Waits for the operations still running (each has its own timeout). */
  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  close(): void {
    for (const t of [...this.submitters, this.inbound]) t.close();
  }

  private other(from: number, k: number): SeededMailbox {
    const n = this.mailboxes.length;
    return this.mailboxes[(from + 1 + (k % (n - 1))) % n]!;
  }

  private withKept(k: number, op: (mailbox: number, id: string) => Promise<unknown>): (() => Promise<void>) | null {
    const m = k % this.mailboxes.length;
    const keep = this.pools[m]!.keep;
    if (keep.length === 0) return null;
    const id = keep[(k * 7919) % keep.length]!;
    return () => op(m, id).then(() => undefined);
  }

  /** Lists the newest page and learns its ids: alternately kept (get, read-state) or doomed (delete). */
  private async list(m: number, k: number): Promise<void> {
    const data = (await this.http(k, m, 'GET', '/api/messages?limit=50', 200)) as {
      items: Array<{ messageId: string }>;
    };
    const pool = this.pools[m]!;
    for (const { messageId } of [...data.items].reverse()) {
      if (pool.known.has(messageId)) continue;
      pool.known.add(messageId);
      if (pool.known.size % 2 === 0) pool.doomed.push(messageId);
      else {
        pool.keep.push(messageId);
        if (pool.keep.length > KEEP_MAX) pool.keep.shift();
      }
    }
  }

  /** One HTTP call as mailbox `m`, spread over the API processes; anything but `expect` is an error. */
  private async http(
    k: number,
    m: number,
    method: string,
    path: string,
    expect: number,
    body?: unknown,
  ): Promise<unknown> {
    const url = `${this.t.apiUrls[k % this.t.apiUrls.length]}${path}`;
    const res = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${this.mailboxes[m]!.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(OP_TIMEOUT_MS),
    });
    const text = await res.text();
    if (res.status !== expect)
      throw new Error(`${method} ${path.replace(/msg_\w+/, '{id}')} → ${res.status} ${text.slice(0, 200)}`);
    return (JSON.parse(text) as { data: unknown }).data;
  }
}
