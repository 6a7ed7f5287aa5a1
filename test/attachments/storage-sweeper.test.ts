import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { rowsOf, sendBody, waitFor } from '../delivery/helpers.js';
import { startSmtpTestServer, submitter } from '../smtp/world.js';
import { BLOB_REFERENCES, StorageSweeper } from '../../src/core/flows/housekeeping/storage-sweeper.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';

// The storage sweeper (durability): orphan blobs a crash leaves between writing a blob
// and committing its row, temp files of interrupted file writes, and uploads nobody sent. Both
// blob stores, on both engines (this file runs in the postgres and the pglite projects).

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const upload = (server: TestServer, token: string, content: string) => {
  const form = new FormData();
  form.set('file', new Blob([content], { type: 'text/plain' }), 'f.txt');
  return server.api(token).raw('/api/messages/attachments', { method: 'POST', body: form });
};

describe('BLOB_REFERENCES', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('names every column of the schema that holds a blob key', async () => {
    const q = rowsOf(() => server);
    const columns = await q`select table_name, column_name from information_schema.columns
      where table_schema = current_schema() and column_name like '%blob%' order by table_name, column_name`;
    expect(columns.map((c) => `${c.table_name}.${c.column_name}`).sort()).toEqual(
      BLOB_REFERENCES.map((r) => `${r.table}.${r.column}`).sort(),
    );
  });
});

describe.each(['fs', 'postgres'] as const)('storage sweeper, %s blob store', (store) => {
  let server: TestServer;
  let alice: { mailboxId: string; address: string; token: string };
  const q = rowsOf(() => server);
  beforeAll(async () => {
    server = await startSmtpTestServer({ roles: ['api', 'smtp'], env: { BLOB_STORE: store } });
    const domain = await server.createDomain(undefined, { sendRateLimitPerMinute: 10_000 });
    alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
  });
  afterAll(async () => {
    await server?.close();
  });

  /** The sweeper with its clock `aheadMs` in the future, so ages are tested without sleeping. */
  const sweeperAt = (aheadMs: number) =>
    new StorageSweeper(
      server.runtime.services.db,
      server.runtime.services.blobs,
      { now: () => new Date(Date.now() + aheadMs) },
      { orphanGraceMs: HOUR, uploadTtlMs: DAY },
    );
  const exists = (key: string) =>
    server.runtime.services.blobs.get(key).then(
      () => true,
      () => false,
    );
  const referencedKeys = async () =>
    (
      await q`select raw_blob_key as key from message where raw_blob_key is not null
    union select blob_key from attachment`
    ).map((r) => r.key as string);

  it('keeps referenced blobs and young debris, deletes orphans past the grace and uploads past their TTL', async () => {
    expect(server.runtime.services.config.blobStore).toBe(store);
    // Referenced: an SMTP submission (raw message + attachment), an HTTP send with a claimed upload,
    // and an upload nobody sent yet.
    const mail = submitter(server, alice.address, alice.token);
    const info = await mail.sendMail({
      from: alice.address,
      to: 'x@example.invalid',
      subject: 'with raw',
      text: 'body',
      attachments: [{ filename: 'a.txt', content: 'smtp attachment' }],
    });
    mail.close();
    expect(info.response).toMatch(/^250 /);
    const claimed = await upload(server, alice.token, 'claimed upload');
    const sent = await server
      .api(alice.token)
      .post(
        '/api/messages/send',
        sendBody('x@example.invalid', { attachmentIds: [claimed.body.data.attachmentUploadId] }),
      );
    expect(sent.status).toBe(202);
    const unclaimed = await upload(server, alice.token, 'unclaimed upload');
    expect(unclaimed.status).toBe(201);
    const referenced = await referencedKeys();
    expect(referenced).toHaveLength(4);

    // What a kill -9 leaves: a raw message stored before its send committed and a write that never
    // finished (a temp file, or chunks without their blob row).
    const orphan = `raw/${newId(ID_PREFIX.message)}`;
    await server.runtime.services.blobs.put(orphan, Buffer.from('never committed'));
    if (store === 'postgres') {
      // A put killed mid-stream: chunks committed, no blob row (pg-blob-store.ts).
      await q`insert into blob_chunk (key, seq, data) values (${`att/${newId(ID_PREFIX.attachment)}`}, 0, ${Buffer.from('half')})`;
    } else {
      mkdirSync(path.join(server.dataDir, 'blobs', 'att'), { recursive: true });
      writeFileSync(
        path.join(server.dataDir, 'blobs', 'att', `${newId(ID_PREFIX.attachment)}.0123456789ab.tmp`),
        'half',
      );
    }

    // Now everything is younger than the grace: an unreferenced young blob is exactly what a write
    // in flight looks like, so nothing goes.
    expect(await sweeperAt(0).sweep()).toEqual({ expiredUploads: 0, orphanBlobs: 0, incompleteWrites: 0 });
    expect(await exists(orphan)).toBe(true);

    // Past the grace: the orphan (and the temp file) go; every referenced blob stays.
    expect(await sweeperAt(2 * HOUR).sweep()).toEqual({
      expiredUploads: 0,
      orphanBlobs: 1,
      incompleteWrites: 1,
    });
    expect(await exists(orphan)).toBe(false);
    for (const key of referenced) expect(await exists(key), key).toBe(true);

    // Past the upload TTL: the unclaimed upload goes with its blob, and can no longer be sent.
    const [row] = await q`select blob_key from attachment where id = ${unclaimed.body.data.attachmentUploadId}`;
    expect(await sweeperAt(DAY + HOUR).sweep()).toEqual({ expiredUploads: 1, orphanBlobs: 0, incompleteWrites: 0 });
    expect(await q`select id from attachment where id = ${unclaimed.body.data.attachmentUploadId}`).toEqual([]);
    expect(await exists(row.blob_key)).toBe(false);
    const late = await server
      .api(alice.token)
      .post(
        '/api/messages/send',
        sendBody('x@example.invalid', { attachmentIds: [unclaimed.body.data.attachmentUploadId] }),
      );
    expect(late.status).toBe(400);
    expect(late.body.errMsg).toMatch(/unknown, already used/);
    for (const key of referenced.filter((k) => k !== row.blob_key)) expect(await exists(key), key).toBe(true);
    const claimedRow = (await q`select blob_key from attachment where id = ${claimed.body.data.attachmentUploadId}`)[0];
    expect((await server.runtime.services.blobs.get(claimedRow.blob_key)).toString()).toBe('claimed upload');
  });

  it('races expiry against sends claiming the same uploads: each upload is either sent with its blob or gone', async () => {
    const uploads = await Promise.all(Array.from({ length: 30 }, (_, i) => upload(server, alice.token, `race ${i}`)));
    const ids = uploads.map((u) => u.body.data.attachmentUploadId as string);
    // Every upload is past its TTL for this sweeper; the sends race it for each one.
    const sweeper = sweeperAt(DAY + HOUR);
    let done = false;
    let sweeps = 0;
    // setImmediate between passes: PGlite answers in microtasks, so a bare loop would starve the sends.
    const sweeping = (async () => {
      while (!done) {
        await sweeper.sweep();
        sweeps++;
        await new Promise((r) => setImmediate(r));
      }
    })();
    const sends = await Promise.all(
      ids.map(async (id, i) => {
        await new Promise((r) => setTimeout(r, i * 3));
        return server
          .api(alice.token)
          .post('/api/messages/send', sendBody('x@example.invalid', { subject: id, attachmentIds: [id] }));
      }),
    );
    done = true;
    await sweeping;
    expect(sweeps).toBeGreaterThan(0);
    let sentWithBlob = 0;
    let expired = 0;
    for (const [i, id] of ids.entries()) {
      const [row] = await q`select message_id, blob_key from attachment where id = ${id}`;
      if (sends[i]!.status === 202) {
        // Claimed: the row names the message and the blob is intact.
        expect(row?.message_id).toBe(sends[i]!.body.data.messageId);
        expect((await server.runtime.services.blobs.get(row.blob_key)).toString()).toBe(`race ${i}`);
        sentWithBlob++;
      } else {
        expect(sends[i]!.status).toBe(400);
        expect(row).toBeUndefined();
        expired++;
      }
    }
    expect(sentWithBlob + expired).toBe(ids.length);
    // No blob any row names is missing, whichever side won.
    for (const key of await referencedKeys()) expect(await exists(key), key).toBe(true);
  });
});

describe('storage sweeper on the worker role', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      roles: ['worker'],
      env: { STORAGE_SWEEP_INTERVAL: '100ms', BLOB_ORPHAN_GRACE: '0' },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('runs periodically with the configured grace', async () => {
    const key = `raw/${newId(ID_PREFIX.message)}`;
    await server.runtime.services.blobs.put(key, Buffer.from('orphan'));
    await waitFor(
      () =>
        server.runtime.services.blobs.get(key).then(
          () => false,
          () => true,
        ),
      10_000,
      'orphan swept',
    );
  });
});
