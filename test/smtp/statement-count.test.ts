import { createRequire } from 'node:module';
import type pgTypes from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, type TestServer } from '../support/harness.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { loggedInWire, mxPort, startSmtpTestServer } from './world.js';
import {
  deliverQueued,
  heldQueue,
  inboundQueue,
  localWorker,
  queueWorker,
  submissionQueueWorker,
  writeQueuedSubmissions,
} from '../support/intake-queue.js';

// Statements PostgreSQL runs for one message, MAIL FROM to the 250 (BEGIN and COMMIT included):
// every round trip costs both processes CPU on a shared machine (bench/smtp,
// docs/design/smtp-intake.md). Counted on the pg client, so this file runs on PostgreSQL only; the
// bounds stop a change from quietly adding round trips back to the hot path. Before the 250:
// - 587, a session's message after its first: end of DATA's policy inputs (one statement: rules,
//   counts, contacts) and the queue row with BEGIN and COMMIT in one round trip (its quota
//   reservation is made by its INSERT, which fails on its own, so COMMIT travels with it); the
//   session's MAIL FROM read is reused within AUTH_CACHE_TTL (sender-read-cache.ts). A session's
//   first message adds that read (sender identity, quota state, the policy RCPT TO judges by).
// - 25: RCPT TO's route (with the recipient's quota state) and the queue row with BEGIN and COMMIT.
// Behind the 250 (the worker): 25's delivery is the claim (none for a row the intake hands to the
// worker of its own process, LocalHandoff) and one pipelined transaction
// (src/storage/statement-pipeline.ts), the hosted-From read in its first batch; 587's write is the claim and one pipelined
// transaction of the message, thread, recipients, outbox job, audit and event rows. Inbound screening
// (docs/screening.md) reads the receiving mailbox's address, policy and contact domains once inside
// 25's delivery transaction, before the insert that its verdict decides.
const MAX_SUBMISSION_STATEMENTS = 4;
const MAX_SUBMISSION_FIRST_STATEMENTS = 5; // a session's first MAIL FROM reads its sender
const MAX_INBOUND_STATEMENTS = 4;
const MAX_SUBMISSION_ROUND_TRIPS = 2;
const MAX_SUBMISSION_FIRST_ROUND_TRIPS = 3;
const MAX_INBOUND_ROUND_TRIPS = 2;
const MAX_INBOUND_DELIVERY_STATEMENTS = 11;
const MAX_INBOUND_DELIVERY_ROUND_TRIPS = 4;
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
  // Flow control off: its depth reading is one statement per process per interval, not per message
  // (intake-flow.ts; test/smtp/intake-flow.test.ts), and would land in whichever message comes first.
  server = await startSmtpTestServer({ env: { AUTH_CACHE_TTL: '10m', SMTP_IN_FLOW_DELAY: '0' } });
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

  it('inbound on 25 with a worker in the same process: no claim, the row handed over after its commit', async () => {
    const held = heldQueue(inboundQueue(server.runtime), false);
    const worker = localWorker(server.runtime, held.queue, { workerId: 'statement-count', batch: 32 });
    await held.claimed(); // its start looks at the queue once (empty): not part of the count
    const wire = await SmtpWire.connect(mxPort(server));
    await wire.cmd('EHLO sender.example', 250);
    const all = await counted(async () => {
      await wire.cmd('MAIL FROM:<news@sender.example>', 250);
      await wire.cmd(`RCPT TO:<${alice.address}>`, 250);
      await wire.cmd('DATA', 354);
      await wire.cmd(rfc5322({ from: 'news@sender.example', to: alice.address }) + '\r\n.', 250);
      await worker.stop(); // resolves once the handed-over message is stored
    });
    await wire.cmd('QUIT', 221);
    const text = all.list.map(short).join('\n');
    expect(
      all.list.some((q) => /^\s*update "?inbound_queue/i.test(q)),
      text,
    ).toBe(false);
    expect(
      all.list.some((q) => /^\s*delete from "?inbound_queue/i.test(q)),
      text,
    ).toBe(true);
    expect(all.list.length, text).toBeLessThanOrEqual(MAX_INBOUND_STATEMENTS + MAX_INBOUND_DELIVERY_STATEMENTS - 1);
    expect(all.trips, text).toBeLessThanOrEqual(MAX_INBOUND_ROUND_TRIPS + MAX_INBOUND_DELIVERY_ROUND_TRIPS - 1);
    // Two commits, the queue row's and the delivery's; no write of its own outside them.
    expect(writesOutsideTheTransaction(all.list)).toEqual([]);
    expect(all.list.filter((q) => /^\s*commit/i.test(q))).toHaveLength(2);
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
