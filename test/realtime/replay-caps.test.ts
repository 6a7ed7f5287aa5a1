import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Socket } from 'socket.io-client';
import { startTestServer, type TestServer } from '../support/harness.js';
import { appendEvent } from '../../src/core/state/events/event-log.js';
import { connect, refusal } from './client.js';
import { REPLAY_PAGE } from '../../src/channels/realtime/catch-up.js';

// docs/api.md, "Per-token bounds": at most MAX_REPLAYS_PER_TOKEN replays (handshakes with
// lastEventId) in flight per token, else connect_error { code: 429, errorCode: TOO_MANY_REPLAYS };
// replay pages queue at one process-wide FairGate, so a backlog takes turns.

let server: TestServer;
let a: { mailboxId: string; address: string; token: string };
let b: { mailboxId: string; address: string; token: string };

beforeAll(async () => {
  server = await startTestServer({ roles: ['api', 'realtime'], env: { MAX_REPLAYS_PER_TOKEN: '2' } });
  const d = await server.createDomain();
  a = await server.createMailbox(d.token, `a@${d.name}`);
  b = await server.createMailbox(d.token, `b@${d.name}`);
  // A backlog of events (the log is what a replay reads), more than two pages.
  await server.runtime.services.db.tx(async (trx) => {
    for (let i = 0; i < REPLAY_PAGE * 2 + 5; i++)
      await appendEvent(trx, a.mailboxId, 'message.received', { messageId: `m${i}` }, new Date());
  });
});
afterAll(async () => {
  await server?.close();
});

const open = (token: string, lastEventId?: string) =>
  new Promise<{ socket: Socket; ready: Promise<string>; received: () => number }>((resolve, reject) => {
    const socket = connect(server.url, { auth: { token, ...(lastEventId ? { lastEventId } : {}) } });
    let received = 0;
    socket.on('message.received', () => received++);
    const ready = new Promise<string>((r) =>
      socket.once('subscription.ready', (p: { lastEventId: string }) => r(p.lastEventId)),
    );
    socket.once('connect', () => resolve({ socket, ready, received: () => received }));
    socket.once('connect_error', (e) => reject(e));
  });

/** Occupies every slot of the replay gate until the returned function is called. */
function holdGate(): () => void {
  const gate = server.runtime.services.replayGate;
  let free!: () => void;
  const held = new Promise<void>((r) => (free = r));
  for (let i = 0; i < gate.width; i++) void gate.run(() => held);
  return free;
}

describe('replay bounds', () => {
  it('refuses a replay past MAX_REPLAYS_PER_TOKEN, never a live socket or another token, and frees the slot at live', async () => {
    const free = holdGate();
    const r1 = await open(a.token, '0');
    const r2 = await open(a.token, '0');
    expect(server.runtime.services.replayGate.load.waiting).toBeGreaterThanOrEqual(2);
    const third = await refusal(connect(server.url, { auth: { token: a.token, lastEventId: '0' } }));
    expect(third).toMatchObject({ code: 429, errorCode: 'TOO_MANY_REPLAYS' });
    // Live sockets of the same token and replays of another token are not counted against it.
    const live = await open(a.token);
    const other = await open(b.token, '0');
    free();
    // Both replays go through the gate page by page and deliver the whole backlog.
    const total = REPLAY_PAGE * 2 + 5;
    expect(await r1.ready).toBe(String(total));
    expect(await r2.ready).toBe(String(total));
    expect(r1.received()).toBe(total);
    expect(r2.received()).toBe(total);
    await other.ready;
    // At live the slots are back.
    const again = await open(a.token, '0');
    await again.ready;
    for (const s of [r1, r2, live, other, again]) s.socket.close();
  });
});
