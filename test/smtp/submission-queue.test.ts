import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf } from '../delivery/helpers.js';
import { submissionQueueWorker, writeQueuedSubmissions } from '../support/intake-queue.js';
import { rfc5322, type SmtpWire } from './smtp-wire.js';
import { loggedInWire, startSmtpTestServer } from './world.js';
import { reservationFor } from '../../src/core/state/quota/storage-quota.store.js';
import { claimSubmissions } from '../../src/core/flows/submission/submission-queue.store.js';
import { QueueClaimLost } from '../../src/core/flows/intake/intake-queue.store.js';

// Queued submission on port 587 (docs/api.md, "Queued intake"): every decision before the 250,
// which follows the commit of one submission_queue row; the worker writes the message behind it
// under the id the 250 named, exactly once, with the verdict made before the 250.

let server: TestServer;
let x: { domainId: string; name: string; token: string };
const q = rowsOf(() => server);
let boxes = 0;
const newBox = () => server.createMailbox(x.token, `sub${++boxes}@${x.name}`);
const setQuota = (mailboxId: string, bytes: number | null) =>
  q`update mailbox set storage_quota_bytes = ${bytes} where id = ${mailboxId}`;
const used = async (mailboxId: string) =>
  Number((await q`select storage_used_bytes from mailbox where id = ${mailboxId}`)[0].storage_used_bytes);
const queueRow = async (id: string) => (await q`select * from submission_queue where id = ${id}`)[0];
const messageRow = async (id: string) => (await q`select * from message where id = ${id}`)[0];
const messageIdOf = (reply: string) => /^250 2\.0\.0 (?:Queued|Held for approval) as (msg_\w+)$/.exec(reply)?.[1];

/** One message on a logged-in session that does not wait for the worker; the final reply line. */
async function submit(
  box: { address: string; token: string },
  raw: string,
  to = ['someone@remote.example'],
): Promise<string> {
  const wire: SmtpWire = await loggedInWire(server, box);
  wire.awaitQueued = false;
  try {
    await wire.cmd(`MAIL FROM:<${box.address}>`, 250);
    for (const r of to) await wire.cmd(`RCPT TO:<${r}>`, 250);
    await wire.cmd('DATA', 354);
    return (await wire.cmd(`${raw}\r\n.`)).last;
  } finally {
    await wire.cmd('QUIT', 221).catch(() => undefined);
  }
}

beforeAll(async () => {
  server = await startSmtpTestServer();
  x = await server.createDomain(undefined, { sendRateLimitPerMinute: 1000 });
});
afterAll(async () => {
  await server?.close();
});

describe('queued submission on port 587', () => {
  it('answers 250 naming the message id after the queue row commits; the worker writes it under that id, once', async () => {
    const box = await newBox();
    await setQuota(box.mailboxId, 10_000_000);
    const raw = rfc5322({
      from: box.address,
      to: 'someone@remote.example',
      subject: 'queued send',
      body: `${'y'.repeat(98)}\r\n`.repeat(20), // 2 000 octets in lines a relay takes (RFC 5322 §2.1.1)
    });
    const reply = await submit(box, raw);
    const id = messageIdOf(reply);
    expect(id, reply).toBeDefined();
    // Durable, decided and reserved, not yet a message.
    const row = await queueRow(id!);
    expect(row).toMatchObject({ status: 'pending', token_id: expect.any(String), mail_from: box.address });
    expect(row.verdict).toMatchObject({ hold: null, recipientCount: 1 });
    expect(Buffer.from(row.raw).toString('utf8')).toBe(`${raw}\r\n`);
    expect(await messageRow(id!)).toBeUndefined();
    expect(await used(box.mailboxId)).toBe(reservationFor(Buffer.from(row.raw).length));

    await writeQueuedSubmissions(server.runtime, id);
    expect(await queueRow(id!)).toBeUndefined();
    const message = await messageRow(id!);
    expect(message).toMatchObject({ direction: 'outbound', subject: 'queued send', delivery_status: 'queued' });
    // The reservation became what the message occupies; one outbox job, one audit entry, one event.
    expect(await used(box.mailboxId)).toBe(Number(message.stored_bytes));
    expect(await q`select id from outbox_job where message_id = ${id}`).toHaveLength(1);
    expect(await q`select decision from audit_entry where message_id = ${id}`).toEqual([{ decision: 'accepted' }]);
    expect(await q`select 1 from mailbox_event where payload->'data'->>'messageId' = ${id}`).toHaveLength(1);
    const res = await server.api(box.token).get(`/api/messages/${id}`);
    expect(res.status).toBe(200);
    // Running the worker again writes nothing twice.
    expect(await submissionQueueWorker(server.runtime).runOnce()).toBe(0);
    expect(await q`select id from message where id = ${id}`).toHaveLength(1);
  });

  it('a message the approval gate holds is answered "Held for approval" and written held', async () => {
    const box = await newBox();
    const put = await server.api(x.token).put(`/api/domain/mailboxes/${box.mailboxId}/policy`, { approval: 'all' });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const reply = await submit(box, rfc5322({ from: box.address, to: 'someone@remote.example', subject: 'hold me' }));
    expect(reply).toMatch(/^250 2\.0\.0 Held for approval as msg_/);
    const id = messageIdOf(reply)!;
    expect((await queueRow(id)).verdict.hold).toMatchObject({ mode: 'all' });
    await writeQueuedSubmissions(server.runtime, id);
    expect(await messageRow(id)).toMatchObject({ delivery_status: 'held', approval_status: 'pending' });
    expect(await q`select id from outbox_job where message_id = ${id}`).toHaveLength(0);
    expect(await q`select decision from audit_entry where message_id = ${id}`).toEqual([{ decision: 'held' }]);
  });

  it('refusals stay before the 250 and queue nothing: a From that is no identity (550), the send rate limit (451)', async () => {
    const box = await newBox();
    await q`update mailbox set send_rate_limit_per_minute = 1 where id = ${box.mailboxId}`; // read at AUTH
    const wire = await loggedInWire(server, box);
    wire.awaitQueued = false;
    const send = async (from: string, subject: string) => {
      await wire.cmd(`MAIL FROM:<${box.address}>`, 250);
      await wire.cmd('RCPT TO:<someone@remote.example>', 250);
      await wire.cmd('DATA', 354);
      return (await wire.cmd(`${rfc5322({ from, to: 'someone@remote.example', subject })}\r\n.`)).last;
    };
    expect(await send(`boss@${x.name}`, 'forged')).toMatch(/^550 5\.7\.1 /);
    // The forged message spent nothing: the one send a minute is still there.
    expect(await send(box.address, 'first')).toMatch(/^250 2\.0\.0 Queued as msg_/);
    expect(await send(box.address, 'second')).toMatch(/^451 4\.7\.1 /);
    await wire.cmd('QUIT', 221);
    const rows = await q`select verdict from submission_queue where mailbox->>'id' = ${box.mailboxId}`;
    expect(rows).toHaveLength(1);
    expect(await q`select rule from audit_entry where mailbox_id = ${box.mailboxId} and decision = 'refused'`).toEqual([
      { rule: 'sendRateLimit' },
    ]);
    await writeQueuedSubmissions(server.runtime); // the one accepted is written (and leaves the queue to the next test)
    expect(await q`select subject from message where mailbox_id = ${box.mailboxId}`).toEqual([{ subject: 'first' }]);
  });

  it('near its quota, where the reservation does not fit, the decided message is stored before the 250 by the exact charge, its rate limit spent once', async () => {
    const box = await newBox();
    const raw = rfc5322({
      from: box.address,
      to: 'someone@remote.example',
      subject: 'tight',
      body: `${'z'.repeat(98)}\r\n`.repeat(30),
    });
    await setQuota(box.mailboxId, 9_000); // room for the message, not for reservationFor(its size)
    expect(reservationFor(Buffer.byteLength(raw))).toBeGreaterThan(9_000);
    // One send a minute: deciding again on the way to the direct path would refuse it (451).
    await q`update mailbox set send_rate_limit_per_minute = 1 where id = ${box.mailboxId}`;
    const reply = await submit(box, raw);
    const id = messageIdOf(reply);
    expect(id, reply).toBeDefined();
    expect(await queueRow(id!)).toBeUndefined(); // stored before the 250
    expect(await messageRow(id!)).toMatchObject({ subject: 'tight' });
    expect(await used(box.mailboxId)).toBeLessThanOrEqual(9_000);
    expect(await q`select decision from audit_entry where mailbox_id = ${box.mailboxId}`).toEqual([
      { decision: 'accepted' },
    ]);
  });

  it('a worker whose lease ran out cannot write the message a second time', async () => {
    const box = await newBox();
    const reply = await submit(box, rfc5322({ from: box.address, to: 'someone@remote.example', subject: 'lease' }));
    const id = messageIdOf(reply)!;
    const { db, clock, transport } = server.runtime.services;
    const [stale] = await claimSubmissions(db, 'worker-a', 1, 1, clock.now());
    expect(stale?.id).toBe(id);
    await new Promise((r) => setTimeout(r, 20)); // its 1 ms lease runs out: another worker takes the row
    await writeQueuedSubmissions(server.runtime, id);
    await expect(transport.submission.storeQueued(stale!)).rejects.toBeInstanceOf(QueueClaimLost);
    expect(await q`select id from message where id = ${id}`).toHaveLength(1);
    expect(await q`select id from outbox_job where message_id = ${id}`).toHaveLength(1);
  });

  it('a mailbox deleted while its message waited: the row is dropped, nothing is written', async () => {
    const box = await newBox();
    const reply = await submit(box, rfc5322({ from: box.address, to: 'someone@remote.example', subject: 'orphan' }));
    const id = messageIdOf(reply)!;
    await q`delete from mailbox where id = ${box.mailboxId}`; // as the operator's reconcile of a deleted Mailbox does
    expect(await submissionQueueWorker(server.runtime).runOnce()).toBe(1);
    expect(await queueRow(id)).toBeUndefined();
    expect(await messageRow(id)).toBeUndefined();
  });
});

describe('SMTP_SUBMISSION_QUEUE=false', () => {
  it('stores before the 250, as before', async () => {
    const direct = await startSmtpTestServer({ env: { SMTP_SUBMISSION_QUEUE: 'false' } });
    try {
      const d = await direct.createDomain();
      const box = await direct.createMailbox(d.token, `direct@${d.name}`);
      const wire = await loggedInWire(direct, box);
      wire.awaitQueued = false;
      await wire.cmd(`MAIL FROM:<${box.address}>`, 250);
      await wire.cmd('RCPT TO:<someone@remote.example>', 250);
      await wire.cmd('DATA', 354);
      const reply = await wire.cmd(
        `${rfc5322({ from: box.address, to: 'someone@remote.example', subject: 'direct' })}\r\n.`,
      );
      await wire.cmd('QUIT', 221);
      const id = messageIdOf(reply.last)!;
      expect((await direct.api(box.token).get(`/api/messages/${id}`)).status).toBe(200);
      const rows = await direct.runtime.services.db.db.selectFrom('submission_queue').select('id').execute();
      expect(rows).toEqual([]);
    } finally {
      await direct.close();
    }
  });
});
