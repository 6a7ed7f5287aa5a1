import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { createTenants, seedMessage, type Tenants } from '../support/tenants.js';
import { fails, mcpClient, ok } from './helpers.js';

// list_messages polls cheaply (docs/api.md, "Change marks and ETags"): ifChangedSince with the
// last changeMark answers { unchanged: true } until something in the mailbox changes.
let server: TestServer;
let t: Tenants;
let a1: Client;
beforeAll(async () => {
  server = await startTestServer();
  t = await createTenants(server);
  a1 = await mcpClient(server, t.A1.token);
});
afterAll(async () => {
  await a1?.close();
  await server?.close();
});

describe('list_messages changeMark / ifChangedSince', () => {
  it('answers unchanged without items until the mailbox changes, then the new page', async () => {
    await seedMessage(server, t.A1, { subject: 'first' });
    const first = await ok(a1, 'list_messages', { limit: 5 });
    expect(first.unchanged).toBe(false);
    expect(first.items.length).toBeGreaterThan(0);
    const same = await ok(a1, 'list_messages', { limit: 5, ifChangedSince: first.changeMark });
    expect(same).toEqual({ changeMark: first.changeMark, unchanged: true });
    // The mark belongs to the arguments: another page size is another read.
    const other = await ok(a1, 'list_messages', { limit: 4, ifChangedSince: first.changeMark });
    expect(other.unchanged).toBe(false);
    expect(other.changeMark).not.toBe(first.changeMark);
    // A change to the mailbox (a read flag through the HTTP API) gives a new mark and the page.
    const id = first.items[0].messageId;
    const put = await server.api(t.A1.token).put(`/api/messages/${id}/read-state`, { isRead: !first.items[0].isRead });
    expect(put.status).toBe(200);
    const changed = await ok(a1, 'list_messages', { limit: 5, ifChangedSince: first.changeMark });
    expect(changed.unchanged).toBe(false);
    expect(changed.changeMark).not.toBe(first.changeMark);
    expect(changed.items[0].isRead).toBe(!first.items[0].isRead);
  });

  it('refuses like list_messages does, whatever ifChangedSince says', async () => {
    const dx = await mcpClient(server, t.X.token);
    const refused = await fails(dx, 'list_messages', { ifChangedSince: 'cm1.anything' });
    expect(refused.code).toBe(400);
    await dx.close();
  });
});
