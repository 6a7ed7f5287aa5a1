import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { sql } from '../../src/storage/database.js';
import { InProcessEventBus } from '../../src/storage/event-bus.js';
import { announcingLocally, ChangeSequences } from '../../src/core/state/messages/change-sequence.js';
import type { MailboxEvent } from '../../src/types/mailbox-event.js';

// The rules of the in-memory change sequences (docs/api.md, "Change marks and ETags"), on the real
// database and the real in-process bus: announcements raise and never lower, a read in flight
// never stores less than what was announced meanwhile, a process's own publish is seen at once.
let server: TestServer;
let mailboxId: string;
beforeAll(async () => {
  server = await startTestServer();
  const domain = await server.createDomain();
  mailboxId = (await server.createMailbox(domain.token, `seq@${domain.name}`)).mailboxId;
});
afterAll(async () => {
  await server?.close();
});

const event = (seq: number): MailboxEvent => ({
  eventId: String(seq),
  type: 'message.read-state',
  mailboxId,
  mailboxAddress: 'seq@x.test',
  occurredAtTs: Date.now(),
  data: {},
});
/** Sets the sequence in the database only, as a change no bus announced. */
const setInDatabase = (seq: number) =>
  sql`update mailbox set event_seq = ${seq} where id = ${mailboxId}`.execute(server.runtime.services.db.db);
const remembering = (bus: InProcessEventBus) =>
  new ChangeSequences(server.runtime.services.db, bus, { cached: true, maxAgeMs: 600_000 });

describe('ChangeSequences', () => {
  it('raises on announcements, never lowers, and serves from memory in between', async () => {
    const bus = new InProcessEventBus();
    const sequences = remembering(bus);
    await setInDatabase(100);
    expect(await sequences.ofMailbox(mailboxId)).toBe(100);
    await setInDatabase(105);
    expect(await sequences.ofMailbox(mailboxId)).toBe(100); // unannounced: memory
    await bus.publish([event(105)]);
    expect(await sequences.ofMailbox(mailboxId)).toBe(105);
    await bus.publish([event(103)]); // late or repeated announcements never go back
    expect(await sequences.ofMailbox(mailboxId)).toBe(105);
    expect(await sequences.fresh(mailboxId)).toBe(105);
    sequences.close();
  });

  it('stores no less than what was announced while its read was in flight', async () => {
    const bus = new InProcessEventBus();
    const sequences = remembering(bus);
    await setInDatabase(200);
    const reading = sequences.ofMailbox(mailboxId);
    await bus.publish([event(230)]);
    expect(await reading).toBe(230);
    expect(await sequences.ofMailbox(mailboxId)).toBe(230);
    sequences.close();
  });

  it('sees its own process’s publish at once, before the bus delivers anything', async () => {
    const silent = new InProcessEventBus(); // what this process hears: nothing arrives
    const sequences = remembering(silent);
    const publishing = announcingLocally(new InProcessEventBus(), sequences);
    await setInDatabase(300);
    expect(await sequences.ofMailbox(mailboxId)).toBe(300);
    await publishing.publish([event(301)]);
    expect(await sequences.ofMailbox(mailboxId)).toBe(301);
    sequences.close();
  });

  it('off, every read asks the database', async () => {
    const sequences = new ChangeSequences(server.runtime.services.db, new InProcessEventBus(), {
      cached: false,
      maxAgeMs: 600_000,
    });
    await setInDatabase(400);
    expect(await sequences.ofMailbox(mailboxId)).toBe(400);
    await setInDatabase(401);
    expect(await sequences.ofMailbox(mailboxId)).toBe(401);
  });
});
