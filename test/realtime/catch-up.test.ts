import { describe, expect, it } from 'vitest';
import type { Socket } from 'socket.io';
import { ENGINE } from '../support/harness.js';
import { silentLogger } from '../../src/core/base/logger.js';
import type { MailboxEvent } from '../../src/types/mailbox-event.js';
import type { EventService, ReplayResult } from '../../src/core/state/events/event.service.js';
import { CatchUp, roomOf } from '../../src/channels/realtime/catch-up.js';
import { MailboxFeed } from '../../src/channels/realtime/mailbox-feed.js';
import { range } from '../events/helpers.js';

// The switch from replay to live, with every interleaving forced by hand: a fake log whose reads
// resolve when the test says, a fake socket that records what it would send. No storage is
// involved, so this runs in one engine project only.
const mailbox = { id: 'mbx_1', address: 'a@x.test', domainId: 'dom_1', displayName: '', sendRateLimitPerMinute: null };
const ev = (seq: number): MailboxEvent => ({
  eventId: String(seq),
  type: 'message.read-state',
  mailboxId: mailbox.id,
  mailboxAddress: mailbox.address,
  occurredAtTs: 0,
  data: {},
});

/** A log of `head` events whose reads wait for `release()`. */
class FakeLog {
  head = 0;
  held: Array<() => void> = [];
  holdReads = false;
  async replay(_m: unknown, after: number, limit: number): Promise<ReplayResult> {
    const headSeq = this.head; // the read's snapshot: what commits later is not in it
    if (this.holdReads) await new Promise<void>((r) => this.held.push(r));
    const events = range(after + 1, Math.min(headSeq, after + limit)).map(ev);
    return { events, resyncRequired: false, headSeq, oldestSeq: null, hasMore: after + limit < headSeq };
  }
  heldHead: Array<() => void> = [];
  holdHead = false;
  async headOf(): Promise<number> {
    if (this.holdHead) await new Promise<void>((r) => this.heldHead.push(r));
    return this.head;
  }
  release(): void {
    for (const r of this.held.splice(0)) r();
  }
}

function world(log: FakeLog) {
  const received: number[] = [];
  let inRoom = false;
  const socket = {
    connected: true,
    emit: (name: string, payload: MailboxEvent) => {
      if (name.startsWith('message.')) received.push(Number(payload.eventId));
      return true;
    },
    join: (room: string) => {
      expect(room).toBe(roomOf(mailbox.id));
      inRoom = true;
    },
  } as unknown as Socket;
  const events = { replay: log.replay.bind(log), head: () => log.headOf() } as unknown as EventService;
  const feed = new MailboxFeed(mailbox, events, {
    log: silentLogger,
    toRoom: (_id, name, payload) => {
      if (inRoom && name.startsWith('message.')) received.push(Number((payload as MailboxEvent).eventId));
    },
  });
  return { received, feed, events, socket, isLive: () => inRoom };
}
const tick = () => new Promise((r) => setTimeout(r, 5));

describe.skipIf(ENGINE === 'pglite')('CatchUp: replay then live, no gap, no duplicate', () => {
  it('merges live events that arrive while the log read is in flight', async () => {
    const log = new FakeLog();
    log.head = 5;
    const w = world(log);
    await w.feed.whenStarted();
    log.holdReads = true;
    new CatchUp(w.socket, w.feed, w.events, 2, () => {
      throw new Error('failed');
    }).start(true);
    // Committed and announced while the replay read is still pending.
    log.head = 7;
    w.feed.receive(ev(6));
    w.feed.receive(ev(7));
    log.release();
    await tick();
    expect(w.isLive()).toBe(true);
    w.feed.receive(ev(8));
    expect(w.received).toEqual(range(3, 8));
  });

  it('waits in private when the log read got ahead of the feed, and joins once level', async () => {
    const log = new FakeLog();
    const w = world(log);
    await w.feed.whenStarted();
    log.head = 4; // committed, announcements still on their way
    new CatchUp(w.socket, w.feed, w.events, 0, () => undefined).start(true);
    await tick();
    expect(w.received).toEqual([1, 2, 3, 4]);
    expect(w.isLive()).toBe(false);
    for (const s of [1, 2, 3]) w.feed.receive(ev(s));
    expect(w.isLive()).toBe(false);
    w.feed.receive(ev(4));
    expect(w.isLive()).toBe(true);
    log.head = 5;
    w.feed.receive(ev(5));
    expect(w.received).toEqual([1, 2, 3, 4, 5]);
  });

  it('reads again when the feed started after the replay read', async () => {
    const log = new FakeLog();
    log.head = 2;
    log.holdHead = true;
    const w = world(log); // the feed's head read is pending
    new CatchUp(w.socket, w.feed, w.events, 0, () => undefined).start(true);
    await tick();
    expect(w.received).toEqual([1, 2]);
    log.head = 6; // the feed starts at 6, after the replay read saw 2
    for (const r of log.heldHead.splice(0)) r();
    await tick();
    expect(w.isLive()).toBe(true);
    w.feed.receive(ev(7));
    expect(w.received).toEqual(range(1, 7));
  });

  it('fills a feed gap from the log and emits in order', async () => {
    const log = new FakeLog();
    const w = world(log);
    await w.feed.whenStarted();
    new CatchUp(w.socket, w.feed, w.events, 0, () => undefined).start(false);
    expect(w.isLive()).toBe(true);
    log.head = 3;
    w.feed.receive(ev(3)); // 1 and 2 were never announced
    await tick();
    expect(w.received).toEqual([1, 2, 3]);
  });
});
