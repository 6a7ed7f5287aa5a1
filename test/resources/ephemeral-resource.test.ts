import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock } from '../support/tenants.js';
import { ResourceReconciler } from '../../src/core/flows/resources/reconciler.js';
import { MailboxExpirySweeper } from '../../src/core/flows/housekeeping/mailbox-expiry.js';
import { sql } from '../../src/storage/database.js';
import { MemorySecretStore, MemoryStatusSink, domainResource, mailboxResource } from './memory-ports.js';

// A Mailbox resource with spec.ttlSeconds (docs/workflow.md, "Ephemeral mailboxes"): the mailbox
// ends ttlSeconds after its creation, its token is refused at once, the reconcile after the end
// deletes the token Secret and reports Expired, and the swept mailbox is not re-created.

const clock = new ManualClock();
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ clock });
});
afterAll(async () => {
  await server?.close();
});

const DAY = 86_400_000;

function setup() {
  const s = server.runtime.services;
  const secrets = new MemorySecretStore();
  const status = new MemoryStatusSink();
  const reconciler = new ResourceReconciler({
    db: s.db,
    tokens: s.tokens,
    minter: s.tokenMinter,
    clock,
    log: s.log,
    secrets,
    status,
    domainTokenTtlMs: 90 * DAY,
    mailboxTokenTtlMs: 90 * DAY,
  });
  return { s, secrets, reconciler, domainName: `e${randomBytes(4).toString('hex')}.test` };
}

const authenticates = (token: string | undefined) =>
  server.runtime.services.tokenAuth.authenticate(token, null).then(
    () => true,
    () => false,
  );
const mailboxRows = (address: string) =>
  server.runtime.services.db.rows(
    sql<{ id: string; expires_at: string | null; disabled_at: string | null }>`select id, expires_at, disabled_at
      from mailbox where address = ${address}`,
  );

describe('Mailbox resource with spec.ttlSeconds', () => {
  it('ends the mailbox, deletes its token Secret, reports Expired and is not re-created after the sweep', async () => {
    const { s, secrets, reconciler, domainName } = setup();
    const address = `temp@${domainName}`;
    await reconciler.reconcileDomain(domainResource('d', { domain: domainName }));
    const res = mailboxResource('temp', { address, ttlSeconds: 300 });
    const createdAt = clock.now().getTime();
    expect(await reconciler.reconcileMailbox(res)).toMatchObject({ outcome: 'created', ready: true });
    const [row] = await mailboxRows(address);
    expect(new Date(row!.expires_at!).getTime()).toBe(createdAt + 300_000);
    const token = secrets.data.get('default/temp-mailbox-token')?.accessToken;
    expect(await authenticates(token)).toBe(true);

    // A resync before the end changes nothing; a longer ttlSeconds moves the end from creation.
    clock.advance(60_000);
    expect(await reconciler.reconcileMailbox(res)).toMatchObject({ outcome: 'unchanged', ready: true });
    const longer = mailboxResource('temp', { address, ttlSeconds: 600 });
    expect(await reconciler.reconcileMailbox(longer)).toMatchObject({ outcome: 'updated', ready: true });
    expect(new Date((await mailboxRows(address))[0]!.expires_at!).getTime()).toBe(createdAt + 600_000);
    expect(await reconciler.reconcileMailbox(res)).toMatchObject({ outcome: 'updated', ready: true });

    clock.advance(240_000); // createdAt + 300 s: the end
    expect(await authenticates(token)).toBe(false);
    expect(await reconciler.reconcileMailbox(res)).toMatchObject({ ready: false, reason: 'Expired' });
    expect(secrets.data.has('default/temp-mailbox-token')).toBe(false);

    await new MailboxExpirySweeper(s.db, s.blobs, clock).sweep();
    const after = await s.db.one(
      sql<{ n: string }>`select count(*) as n from access_token where mailbox_id = ${row!.id}`,
    );
    expect(Number(after!.n)).toBe(0);
    // The resync after the sweep neither re-creates the mailbox nor writes a new Secret.
    const puts = secrets.puts;
    expect(await reconciler.reconcileMailbox(res)).toMatchObject({ ready: false, reason: 'Expired' });
    expect(secrets.puts).toBe(puts);
    expect(await mailboxRows(address)).toHaveLength(1);
    // A second sweep leaves the tombstone alone; deleting the resource removes it, and declaring
    // it again starts a new mailbox.
    expect(await new MailboxExpirySweeper(s.db, s.blobs, clock).sweep()).toBe(0);
    await reconciler.deleteMailbox({ kind: 'Mailbox', namespace: 'default', name: 'temp' });
    expect(await mailboxRows(address)).toHaveLength(0);
    expect(await reconciler.reconcileMailbox(res)).toMatchObject({ outcome: 'created', ready: true });
    expect(await authenticates(secrets.data.get('default/temp-mailbox-token')?.accessToken)).toBe(true);
  });

  it('refuses a ttlSeconds out of range as an invalid spec', () => {
    expect(() => mailboxResource('bad', { address: 'a@example.test', ttlSeconds: 10 })).toThrow(/ttlSeconds/);
  });
});
