import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { appendEvent } from '../../src/core/state/events/event-log.js';
import { REPLAY_PAGE } from '../../src/channels/realtime/catch-up.js';
import { eventsEmitted } from '../../src/telemetry/metric-registry.js';
import { connect } from './client.js';

// A replay goes page by page, and the next page is read only once the previous one left the
// process (catch-up.ts, handedToKernel): a client that stops reading holds back its own replay
// instead of making the server park its whole backlog in memory (the replay flood's RSS figure).

const PAGES = 10;
const TOTAL = REPLAY_PAGE * PAGES;
/** 32 KiB per event: the backlog (64 MiB) is far more than loopback's socket buffers hold. */
const FILLER = 'x'.repeat(32 * 1024);

let server: TestServer;
let box: { mailboxId: string; address: string; token: string };

beforeAll(async () => {
  server = await startTestServer({ roles: ['api', 'realtime'] });
  const d = await server.createDomain();
  box = await server.createMailbox(d.token, `slow@${d.name}`);
  await server.runtime.services.db.tx(async (trx) => {
    for (let i = 0; i < TOTAL; i++)
      await appendEvent(trx, box.mailboxId, 'message.received', { messageId: `m${i}`, filler: FILLER }, new Date());
  });
}, 120_000);
afterAll(async () => {
  await server?.close();
});

/** A TCP relay whose server-to-client direction can be stopped: the client stops reading. */
async function relay(target: URL) {
  const upstreams: net.Socket[] = [];
  const clients = new Map<net.Socket, net.Socket>();
  const proxy = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    upstreams.push(upstream);
    clients.set(upstream, client);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`,
    stopReading: () => upstreams.forEach((u) => (u.unpipe(clients.get(u)), u.pause())),
    readAgain: () => upstreams.forEach((u) => u.pipe(clients.get(u)!)),
    close: () => new Promise<void>((r) => (upstreams.forEach((u) => u.destroy()), proxy.close(() => r()))),
  };
}

const emitted = async () =>
  (await eventsEmitted.get()).values.find((v) => v.labels.type === 'message.received')?.value ?? 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('replay backpressure', () => {
  it('a client that stops reading holds its replay back; when it reads again it gets every event in order', async () => {
    const path = await relay(new URL(server.url));
    const ids: number[] = [];
    const before = await emitted();
    const socket = connect(path.url, { auth: { token: box.token, lastEventId: '0' } });
    const ready = new Promise<string>((r) =>
      socket.once('subscription.ready', (p: { lastEventId: string }) => r(p.lastEventId)),
    );
    socket.on('message.received', (e: { eventId: string }) => ids.push(Number(e.eventId)));
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('connect_error', reject));
    path.stopReading();

    // Let the server run until it stops emitting (2 s without a new event, at most 30 s): without
    // the wait per page it emits the whole backlog into memory.
    let last = await emitted();
    for (let quiet = 0, waited = 0; quiet < 2_000 && waited < 30_000; waited += 250) {
      await sleep(250);
      const now = await emitted();
      quiet = now === last ? quiet + 250 : 0;
      last = now;
    }
    const whileStopped = (await emitted()) - before;
    expect(whileStopped).toBeGreaterThan(0);
    expect(whileStopped).toBeLessThanOrEqual(TOTAL / 2);

    path.readAgain();
    expect(await ready).toBe(String(TOTAL));
    expect(ids).toEqual(Array.from({ length: TOTAL }, (_, i) => i + 1));
    socket.close();
    await path.close();
  }, 120_000);
});
