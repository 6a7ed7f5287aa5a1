import { createRequire } from 'node:module';
import type pgTypes from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, type TestServer } from '../support/harness.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { loggedInWire, mxPort, startSmtpTestServer } from './world.js';
import { deliverQueued, queueWorker, submissionQueueWorker, writeQueuedSubmissions } from '../support/intake-queue.js';

// Statements PostgreSQL runs for one message, MAIL FROM to the 250 (BEGIN and COMMIT included):
// every round trip costs both processes CPU on a shared machine (bench/smtp, README). Counted on
// the pg client, so this file runs on PostgreSQL only; the bound stops a change from quietly
// adding round trips back to the hot path. Before issue 15: 26 on 587 (three commits), 24 on 25 (four);
// the event append (sequence, event row, webhook deliveries) became one statement: 22 → 20, 14 → 12;
// the quota charge raises the direction counter (and locks the row) in its one update: 20 → 19, 12 → 10;
// the mailbox policy and the token chain are read together (at RCPT TO and end of DATA): 19 → 17;
// the early quota refusal is read with the row MAIL FROM (587: the sender identity) or RCPT TO (25:
// the recipient's mailbox) reads anyway, and the domain's send rate limit with the MailboxRef: 17 → 15, 10 → 9.
// Round trips (what costs the CPU: statements sent together share one, src/storage/statement-pipeline.ts):
// before pipelining they equalled the statements; pipelined, the write transaction is 2 (its
// statements with BEGIN, then COMMIT): 587 17 → 9 → 7 round trips, 25 10 → 5 → 4.
// The contacts the "already contacted" question reads (mailbox_contact) are written inside statements
// that run anyway (the recipients' insert, the inbound message's insert): counts unchanged; read
// with the policy inputs (one statement at end of DATA instead of two): 587 15 → 14, 7 → 6 round trips;
// headers naming only the envelope sender checked at MAIL FROM are not read again: 14 → 13, 6 → 5.
// The policy RCPT TO judges by is read with MAIL FROM's sender identity (end of DATA reads it again): 13 → 12, 5 → 4.
// Queued intake on 25 (docs/api.md): the 250 follows RCPT TO's route and one queue row's commit,
// 9 → 4 statements, 4 → 3 round trips; the worker's delivery behind it is the claim, the hosted-From
// read and the pipelined transaction (10 statements, 4 round trips).
// Queued submission on 587 (same section): the 250 follows MAIL FROM's read, end of DATA's policy
// inputs and one queue row's commit, 12 → 5 statements, 4 round trips still (what is gone is the
// write transaction's size: the message, thread, recipients, outbox job, audit and event rows now
// commit behind the 250: the worker's claim and one pipelined transaction, 12 statements, 3 round trips).
// The queue row's reservation made by its INSERT (one statement that fails on its own) lets COMMIT
// travel with it: BEGIN, the insert and COMMIT in one round trip (587 4 → 3, 25 3 → 2). A session's
// next MAIL FROM within AUTH_CACHE_TTL reuses its read (sender-read-cache.ts): 587 5 → 4 statements,
// 3 → 2 round trips for every message after a session's first.
// Inbound screening (docs/screening.md) reads the receiving mailbox's address, policy and contact
// domains once before the message is written (the look-alike and new-domain signals and the hold
// decide what the insert writes), inside its transaction: the delivery 10 → 11 statements, 4 → 5
// round trips (the read travels with BEGIN and the quota charge; the insert waits for it).
const MAX_SUBMISSION_STATEMENTS = 4;
const MAX_SUBMISSION_FIRST_STATEMENTS = 5; // a session's first MAIL FROM reads its sender
const MAX_INBOUND_STATEMENTS = 4;
const MAX_SUBMISSION_ROUND_TRIPS = 2;
const MAX_SUBMISSION_FIRST_ROUND_TRIPS = 3;
const MAX_INBOUND_ROUND_TRIPS = 2;
const MAX_INBOUND_DELIVERY_STATEMENTS = 11;
const MAX_INBOUND_DELIVERY_ROUND_TRIPS = 5;
const MAX_SUBMISSION_WRITE_STATEMENTS = 12;
const MAX_SUBMISSION_WRITE_ROUND_TRIPS = 3;

let server: TestServer;
let alice: { mailboxId: string; address: string; token: string };
const statements: string[] = [];
let roundTrips = 0;
// MikroORM's own copy of node-postgres (it pins one), the one the service's pool uses.
const pg = createRequire(import.meta.resolve('@mikro-orm/postgresql'))('pg') as typeof pgTypes;
const query = pg.Client.prototype.query;

beforeAll(async () => {
  // A TTL no test run outlasts: "the session's next message" is within it however slow the machine.
  server = await startSmtpTestServer({ env: { AUTH_CACHE_TTL: '10m' } });
  const x = await server.createDomain(undefined, { sendRateLimitPerMinute: 1000 });
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  pg.Client.prototype.query = function (this: pgTypes.Client, ...args: unknown[]) {
    const text = args[0];
    roundTrips++;
    // A pipelined batch (statement-pipeline.ts) carries its statements; anything else is one.
    const batch = (text as { statements?: { text: string }[] }).statements;
    if (batch) statements.push(...batch.map((s) => s.text));
    else statements.push(typeof text === 'string' ? text : ((text as { text?: string }).text ?? '?'));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
});
afterAll(async () => {
  pg.Client.prototype.query = query;
  await server?.close();
});

/** The statements run while `fn` sends one message, and the round trips they took. */
async function counted(fn: () => Promise<void>): Promise<{ list: string[]; trips: number }> {
  statements.length = 0;
  roundTrips = 0;
  await fn();
  return { list: [...statements], trips: roundTrips };
}

describe.skipIf(ENGINE !== 'postgres')('SMTP: statements per message', () => {
  it('submission on 587: one message, warm session, the 250 (queued) and the write behind it', async () => {
    const wire = await loggedInWire(server, alice);
    wire.awaitQueued = false; // this test writes the queue itself, counted
    const one = async () => {
      await wire.cmd(`MAIL FROM:<${alice.address}>`, 250);
      await wire.cmd('RCPT TO:<someone@remote.example>', 250);
      await wire.cmd('DATA', 354);
      await wire.cmd(rfc5322({ from: alice.address, to: 'someone@remote.example' }) + '\r\n.', 250);
    };
    // A session's first message reads its sender at MAIL FROM (the token's check is warm: LOGIN).
    const first = await counted(one);
    expect(first.list.length, first.list.map(short).join('\n')).toBeLessThanOrEqual(MAX_SUBMISSION_FIRST_STATEMENTS);
    expect(first.trips, first.list.map(short).join('\n')).toBeLessThanOrEqual(MAX_SUBMISSION_FIRST_ROUND_TRIPS);
    expect(first.list.some((q) => /as identity, .* as full/is.test(q))).toBe(true);
    await writeQueuedSubmissions(server.runtime);
    // Its next message reuses that read: end of DATA's policy inputs and the queue row's commit.
    const { list, trips } = await counted(one);
    expect(list.some((q) => /as identity, .* as full/is.test(q))).toBe(false);
    expect(list.length, list.map(short).join('\n')).toBeLessThanOrEqual(MAX_SUBMISSION_STATEMENTS);
    expect(trips, list.map(short).join('\n')).toBeLessThanOrEqual(MAX_SUBMISSION_ROUND_TRIPS);
    // One commit: the queue row with its raw message, nothing autocommits a write.
    expect(writesOutsideTheTransaction(list)).toEqual([]);
    expect(list.filter((q) => /^\s*commit/i.test(q))).toHaveLength(1);
    expect(list.some((q) => /insert into submission_queue/i.test(q))).toBe(true);
    await wire.cmd('QUIT', 221);
    // The worker's claim and the transaction that writes the message and deletes its queue row.
    const worker = submissionQueueWorker(server.runtime);
    let claimed = 0;
    const write = await counted(async () => {
      claimed = await worker.runOnce();
    });
    expect(claimed).toBe(1);
    expect(write.list.length, write.list.map(short).join('\n')).toBeLessThanOrEqual(MAX_SUBMISSION_WRITE_STATEMENTS);
    expect(write.trips, write.list.map(short).join('\n')).toBeLessThanOrEqual(MAX_SUBMISSION_WRITE_ROUND_TRIPS);
    expect(writesOutsideTheTransaction(write.list.slice(1))).toEqual([]); // the claim is a write of its own
    expect(write.list.filter((q) => /^\s*commit/i.test(q))).toHaveLength(1);
  });

  it('inbound on 25: one message, the 250 (queued intake) and the delivery behind it', async () => {
    const wire = await SmtpWire.connect(mxPort(server));
    await wire.cmd('EHLO sender.example', 250);
    const one = async () => {
      await wire.cmd('MAIL FROM:<news@sender.example>', 250);
      await wire.cmd(`RCPT TO:<${alice.address}>`, 250);
      await wire.cmd('DATA', 354);
      await wire.cmd(rfc5322({ from: 'news@sender.example', to: alice.address }) + '\r\n.', 250);
    };
    await one();
    await deliverQueued(server.runtime);
    const { list, trips } = await counted(one);
    expect(list.length, list.map(short).join('\n')).toBeLessThanOrEqual(MAX_INBOUND_STATEMENTS);
    expect(trips, list.map(short).join('\n')).toBeLessThanOrEqual(MAX_INBOUND_ROUND_TRIPS);
    expect(writesOutsideTheTransaction(list)).toEqual([]);
    expect(list.filter((q) => /^\s*commit/i.test(q))).toHaveLength(1);
    await wire.cmd('QUIT', 221);
    // The worker's claim and the transaction that stores the message and deletes its queue row.
    const worker = queueWorker(server.runtime);
    let claimed = 0;
    const delivery = await counted(async () => {
      claimed = await worker.runOnce();
    });
    expect(claimed).toBe(1);
    expect(delivery.list.length, delivery.list.map(short).join('\n')).toBeLessThanOrEqual(
      MAX_INBOUND_DELIVERY_STATEMENTS,
    );
    expect(delivery.trips, delivery.list.map(short).join('\n')).toBeLessThanOrEqual(MAX_INBOUND_DELIVERY_ROUND_TRIPS);
    expect(writesOutsideTheTransaction(delivery.list.slice(1))).toEqual([]); // the claim is a write of its own
    expect(delivery.list.filter((q) => /^\s*commit/i.test(q))).toHaveLength(1);
  });
});

/** Inserts, updates and deletes that ran outside begin … commit (each its own commit and WAL flush). */
function writesOutsideTheTransaction(list: string[]): string[] {
  let inside = false;
  const outside: string[] = [];
  for (const q of list) {
    if (/^\s*begin/i.test(q)) inside = true;
    else if (/^\s*(commit|rollback)/i.test(q)) inside = false;
    else if (!inside && /^\s*(insert|update|delete)/i.test(q)) outside.push(short(q));
  }
  return outside;
}

const short = (s: string) => s.replace(/\s+/g, ' ').slice(0, 110);
