import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { CommitGroup } from '../../src/storage/commit-group.js';
import { sql, type Sql } from '../../src/storage/database.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { loggedInWire, mxPort, startSmtpTestServer } from './world.js';
import { deliverQueued } from '../support/intake-queue.js';

// Group commit of SMTP intake (src/storage/commit-group.ts): callers arriving together share one
// transaction, each is answered only after the COMMIT holding its rows, and a member that fails
// does not fail the others. A blob row stands in for a message: any row shows the commit.

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

const db = () => server.runtime.services.db;
let n = 0;
const key = () => `raw/group${++n}x${Date.now()}`;
const insertBlob = (trx: Sql, k: string) =>
  sql`insert into blob (key, data, size_bytes, created_at) values (${k}, null, 0, now())`.execute(trx);
const committed = async (k: string) =>
  (await db().rows(sql<{ key: string }>`select key from blob where key = ${k}`)).length === 1;

/** A group with one slot, held busy until `release` so the next callers queue into one group. */
function heldGroup() {
  const group = new CommitGroup(db(), { maxMembers: 32, concurrency: 1 });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const first = group.run('0', async () => gate);
  return { group, release, first };
}

describe('group commit', () => {
  it('commits members that arrived together in one transaction, each answered after the commit', async () => {
    const { group, release, first } = heldGroup();
    const keys = [key(), key(), key()];
    const transactions: string[] = [];
    const resolvedEarly: boolean[] = [];
    let answered = 0;
    const runs = keys.map((k, i) =>
      group
        .run(String(i + 1), async (trx) => {
          await insertBlob(trx, k);
          const txid = await sql<{ id: string }>`select txid_current()::text as id`.execute(trx);
          transactions.push(txid.rows[0]!.id);
          // Nobody in the group has been answered while its transaction is open.
          resolvedEarly.push(answered > 0);
          return k;
        })
        .then(async (k) => {
          answered++;
          // Answered means durable: the row is visible to everyone else at that moment.
          expect(await committed(k)).toBe(true);
          return k;
        }),
    );
    release();
    await first;
    expect(await Promise.all(runs)).toEqual(keys);
    expect(new Set(transactions).size).toBe(1);
    expect(resolvedEarly).toEqual([false, false, false]);
  });

  it('a failing member does not fail the others: the group runs again one by one', async () => {
    const { group, release, first } = heldGroup();
    const [a, c] = [key(), key()];
    const attempts = { a: 0, b: 0, c: 0 };
    const runA = group.run('1', async (trx) => {
      attempts.a++;
      await insertBlob(trx, a);
    });
    const runB = group.run('2', async (trx) => {
      attempts.b++;
      await sql`select 1 / 0`.execute(trx); // a statement error aborts the shared transaction
    });
    const runC = group.run('3', async (trx) => {
      attempts.c++;
      await insertBlob(trx, c);
    });
    release();
    await first;
    const [ra, rb, rc] = await Promise.allSettled([runA, runB, runC]);
    expect(ra.status).toBe('fulfilled');
    expect(rc.status).toBe('fulfilled');
    expect(rb.status).toBe('rejected');
    expect(String((rb as PromiseRejectedResult).reason)).toMatch(/division by zero/);
    expect(await committed(a)).toBe(true);
    expect(await committed(c)).toBe(true);
    // All three started together in the group, which rolled back on b; then each ran alone: no row twice.
    expect(attempts).toEqual({ a: 2, b: 2, c: 2 });
    expect((await db().rows(sql`select 1 from blob where key in (${a}, ${c})`)).length).toBe(2);
  });

  // Queued intake's members commit with their statements (one round trip for the group): a member's
  // failing statement makes the server skip the COMMIT, and the others are written again alone.
  it('members committing with their statements: a failing one rolls the group back, the others commit alone', async () => {
    const { group, release, first } = heldGroup();
    const [a, c] = [key(), key()];
    const attempts = { a: 0, b: 0, c: 0 };
    const once = { commitWithStatements: true };
    const runA = group.run('1', (trx) => (attempts.a++, insertBlob(trx, a)), once);
    // A not-null violation, as a reservation that does not fit refuses (insertReserving).
    const runB = group.run(
      '2',
      (trx) => (
        attempts.b++,
        sql`insert into blob (key, data, size_bytes, created_at) values (${key()}, null, null, now())`.execute(trx)
      ),
      once,
    );
    const runC = group.run('3', (trx) => (attempts.c++, insertBlob(trx, c)), once);
    release();
    await first;
    const [ra, rb, rc] = await Promise.allSettled([runA, runB, runC]);
    expect([ra.status, rb.status, rc.status]).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((rb as PromiseRejectedResult).reason).toMatchObject({ code: '23502' });
    expect(await committed(a)).toBe(true);
    expect(await committed(c)).toBe(true);
    expect(attempts).toEqual({ a: 2, b: 2, c: 2 });
  });

  it('a thrown error (a refused quota, say) fails only its own member', async () => {
    const { group, release, first } = heldGroup();
    const ok = key();
    const runOk = group.run('1', (trx) => insertBlob(trx, ok));
    const runRefused = group.run('2', async () => {
      throw new Error('refused');
    });
    release();
    await first;
    await expect(runRefused).rejects.toThrow('refused');
    await runOk;
    expect(await committed(ok)).toBe(true);
  });
});

describe('group commit over SMTP (SMTP_GROUP_COMMIT=true)', () => {
  let smtp: TestServer;
  let boxes: { mailboxId: string; address: string; token: string }[];
  let full: { mailboxId: string; address: string; token: string };
  beforeAll(async () => {
    smtp = await startSmtpTestServer({ env: { SMTP_GROUP_COMMIT: 'true', SEND_RATE_LIMIT_PER_MINUTE: '1000' } });
    const x = await smtp.createDomain();
    boxes = [];
    for (let i = 0; i < 4; i++) boxes.push(await smtp.createMailbox(x.token, `g${i}@${x.name}`));
    full = await smtp.createMailbox(x.token, `full@${x.name}`);
    // Room for nothing but not full yet: MAIL FROM / RCPT TO pass, the commit refuses (552 5.2.2).
    const res = await smtp
      .api(x.token)
      .put(`/api/domain/mailboxes/${full.mailboxId}/storage`, { storageQuotaBytes: 10 });
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await smtp?.close();
  });

  it('concurrent submissions and deliveries: each gets its own answer, only a refused one is missing', async () => {
    const submit = async (box: { address: string; token: string }, subject: string) => {
      const wire = await loggedInWire(smtp, box);
      await wire.cmd(`MAIL FROM:<${box.address}>`, 250);
      await wire.cmd('RCPT TO:<someone@remote.example>', 250);
      await wire.cmd('DATA', 354);
      const reply = await wire.cmd(rfc5322({ from: box.address, to: 'someone@remote.example', subject }) + '\r\n.');
      await wire.cmd('QUIT', 221);
      return reply.last;
    };
    const deliver = async (to: string, subject: string) => {
      const wire = await SmtpWire.connect(mxPort(smtp));
      await wire.cmd('EHLO sender.example', 250);
      await wire.cmd('MAIL FROM:<news@sender.example>', 250);
      await wire.cmd(`RCPT TO:<${to}>`, 250);
      await wire.cmd('DATA', 354);
      const reply = await wire.cmd(rfc5322({ from: 'news@sender.example', to, subject }) + '\r\n.');
      await wire.cmd('QUIT', 221);
      return reply.last;
    };
    const replies = await Promise.all([
      ...boxes.map((b, i) => submit(b, `sub ${i}`)),
      ...boxes.map((b, i) => deliver(b.address, `in ${i}`)),
      submit(full, 'refused'),
      deliver(full.address, 'refused too'),
    ]);
    expect(replies.slice(0, 8).every((r) => r.startsWith('250'))).toBe(true);
    expect(replies.slice(8)).toEqual([expect.stringMatching(/^552 5\.2\.2/), expect.stringMatching(/^552 5\.2\.2/)]);
    await deliverQueued(smtp.runtime); // port 25's 250s were queue commits
    const rows = await smtp.runtime.services.db.rows(
      sql<{ subject: string; mailbox_id: string }>`select subject, mailbox_id from message order by subject`,
    );
    expect(rows.map((r) => r.subject).sort()).toEqual(
      [...boxes.map((_, i) => `in ${i}`), ...boxes.map((_, i) => `sub ${i}`)].sort(),
    );
    expect(rows.some((r) => r.mailbox_id === full.mailboxId)).toBe(false);
  });
});
