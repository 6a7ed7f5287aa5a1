import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock } from '../support/tenants.js';
import { ResourceReconciler } from '../../src/core/flows/resources/reconciler.js';
import { parseManifests } from '../../src/core/flows/resources/manifest-loader.js';
import { rowsOf } from '../delivery/helpers.js';
import { MemorySecretStore, MemoryStatusSink, domainResource, mailboxResource } from './memory-ports.js';

// Mailbox `spec.storageQuotaBytes` and Domain `spec.defaultStorageQuotaBytes` (docs/api.md,
// "Storage quota"): reconciled into the rows the quota reads, owned by the manifest when given.
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});
const q = rowsOf(() => server);

function reconciler() {
  const s = server.runtime.services;
  return new ResourceReconciler({
    db: s.db,
    tokens: s.tokens,
    minter: s.tokenMinter,
    clock: new ManualClock(),
    log: s.log,
    secrets: new MemorySecretStore(),
    status: new MemoryStatusSink(),
    domainTokenTtlMs: 86_400_000,
    mailboxTokenTtlMs: 86_400_000,
  });
}

describe('declared storage quotas', () => {
  it('reconciles the Domain default and the Mailbox quota, reports a change, and wins over the API', async () => {
    const r = reconciler();
    const name = `s${randomBytes(4).toString('hex')}.test`;
    await r.reconcileDomain(domainResource('sd', { domain: name, defaultStorageQuotaBytes: 1_000_000 }));
    const [d] = await q`select default_storage_quota_bytes as v from domain where name = ${name}`;
    expect(Number(d.v)).toBe(1_000_000);
    const mailbox = mailboxResource('sm', { address: `m@${name}`, storageQuotaBytes: 5000 });
    await r.reconcileMailbox(mailbox);
    const quota = async () =>
      Number((await q`select storage_quota_bytes as v from mailbox where address = ${`m@${name}`}`)[0].v);
    expect(await quota()).toBe(5000);
    expect(await r.reconcileMailbox(mailbox)).toMatchObject({ outcome: 'unchanged' });
    // Changed through the API: the manifest sets it back at its next reconcile.
    await q`update mailbox set storage_quota_bytes = 1 where address = ${`m@${name}`}`;
    expect(await r.reconcileMailbox(mailbox)).toMatchObject({ outcome: 'updated' });
    expect(await quota()).toBe(5000);
    expect(
      await r.reconcileMailbox(mailboxResource('sm', { address: `m@${name}`, storageQuotaBytes: 7000 })),
    ).toMatchObject({ outcome: 'updated' });
    expect(await quota()).toBe(7000);
    // Without the field the API decides: the value stays.
    await r.reconcileMailbox(mailboxResource('sm', { address: `m@${name}` }));
    expect(await quota()).toBe(7000);
    expect(
      await r.reconcileDomain(domainResource('sd', { domain: name, defaultStorageQuotaBytes: 2_000_000 })),
    ).toMatchObject({ outcome: 'updated' });
  });

  it('the manifest schema takes the fields and refuses a negative quota', () => {
    const doc = (v: string) => `apiVersion: mailbox-service.dev/v1alpha1
kind: Mailbox
metadata: { name: agent }
spec:
  address: agent@example.test
  storageQuotaBytes: ${v}`;
    expect(parseManifests(doc('1048576'), 'm.yaml').errors).toEqual([]);
    expect(parseManifests(doc('-1'), 'm.yaml').errors.length).toBeGreaterThan(0);
  });
});
