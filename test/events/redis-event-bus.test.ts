import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ENGINE } from '../support/harness.js';
import { RedisEventBus } from '../../src/storage/redis/redis-event-bus.js';
import { InProcessEventBus } from '../../src/storage/event-bus.js';
import type { MailboxEvent } from '../../src/types/mailbox-event.js';
import { privateRedis, type PrivateRedis } from '../support/processes.js';

// The Redis bus between two "processes" (two connections): delivery, isolation of the channel,
// and what a Redis restart looks like to both sides. A private redis-server, so restarting it
// disturbs nobody. Storage plays no part, so it runs in one engine project only.
const event = (mailboxId: string, seq: number): MailboxEvent => ({
  eventId: String(seq),
  type: 'message.received',
  mailboxId,
  mailboxAddress: 'a@x.test',
  occurredAtTs: 1,
  data: { n: seq },
});
const waitFor = async (check: () => boolean, ms = 5000) => {
  for (const end = Date.now() + ms; !check(); await new Promise((r) => setTimeout(r, 20)))
    if (Date.now() > end) throw new Error('timed out');
};

describe.skipIf(ENGINE !== 'postgres')('RedisEventBus', () => {
  let redis: PrivateRedis;
  const clients: Redis[] = [];
  const buses: RedisEventBus[] = [];
  const bus = () => {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 2 });
    client.on('error', () => undefined);
    clients.push(client);
    const b = new RedisEventBus(client);
    buses.push(b);
    return b;
  };
  beforeAll(async () => {
    redis = await privateRedis();
  });
  afterAll(async () => {
    for (const b of buses) await b.close();
    for (const c of clients) c.disconnect();
    await redis?.kill();
  });

  it('carries events published in one process to subscribers in another, in publish order', async () => {
    const publisher = bus();
    const subscriber = bus();
    const got: MailboxEvent[] = [];
    subscriber.subscribe((e) => got.push(e));
    await new Promise((r) => setTimeout(r, 200)); // the subscription is asynchronous
    await publisher.publish([event('mbx_a', 1), event('mbx_a', 2)]);
    await publisher.publish([event('mbx_b', 1)]);
    await waitFor(() => got.length === 3);
    expect(got).toEqual([event('mbx_a', 1), event('mbx_a', 2), event('mbx_b', 1)]);
  });

  it('never blocks a publisher while Redis is down, and announces a resume to subscribers when it is back', async () => {
    const publisher = bus();
    const subscriber = bus();
    const got: MailboxEvent[] = [];
    let resumes = 0;
    subscriber.subscribe((e) => got.push(e));
    subscriber.onResume(() => {
      resumes++;
    });
    await new Promise((r) => setTimeout(r, 200));
    await redis.kill();
    await waitFor(() => clients.every((c) => c.status !== 'ready'));
    const started = Date.now();
    await publisher.publish([event('mbx_c', 1)]); // lost: the log has it, the resume says "look"
    expect(Date.now() - started).toBeLessThan(50);
    await redis.start();
    await waitFor(() => resumes > 0, 10_000);
    await waitFor(() => clients.every((c) => c.status === 'ready'), 10_000);
    await new Promise((r) => setTimeout(r, 200));
    await publisher.publish([event('mbx_c', 2)]);
    await waitFor(() => got.some((e) => e.eventId === '2'));
    expect(got.map((e) => e.eventId)).toEqual(['2']);
  });

  // The resubscription after a reconnect is the bus's own, its failure handled: ioredis 6.0.0's
  // autoResubscribe sends SUBSCRIBE without a handler, and a close while it waits for the answer
  // was an unhandled rejection (it ends a Node process). A proxy in front of the real Redis holds
  // the SUBSCRIBE that follows a cut, so the close finds it unanswered every time.
  it('closing while the resubscription after a reconnect is unanswered leaves no unhandled rejection', async () => {
    const proxy = await subscribeHoldingProxy(Number(new URL(redis.url).port));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const client = new Redis(`redis://127.0.0.1:${proxy.port}`, { maxRetriesPerRequest: 2, retryStrategy: () => 20 });
      client.on('error', () => undefined);
      const b = new RedisEventBus(client);
      b.subscribe(() => undefined);
      await waitFor(() => b.listening);
      proxy.holdSubscribe = true;
      proxy.cutAll();
      await waitFor(() => proxy.held > 0);
      await b.close();
      client.disconnect();
      await new Promise((r) => setTimeout(r, 100)); // rejections are reported after the turn they happen in
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      proxy.close();
    }
  });

  it('has an in-process twin with the same contract', async () => {
    const b = new InProcessEventBus();
    const got: MailboxEvent[] = [];
    const stop = b.subscribe((e) => got.push(e));
    await b.publish([event('mbx_d', 1)]);
    stop();
    await b.publish([event('mbx_d', 2)]);
    expect(got).toEqual([event('mbx_d', 1)]);
    expect(typeof b.onResume(() => undefined)).toBe('function');
    await b.close();
  });
});

/**
 * A TCP proxy to Redis on `port` that can cut every connection and, while `holdSubscribe` is set,
 * swallows a connection's traffic from its first SUBSCRIBE on (counted in `held`): Redis never
 * answers it.
 */
async function subscribeHoldingProxy(port: number) {
  const sockets = new Set<net.Socket>();
  const state = { holdSubscribe: false, held: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    let holding = false;
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (chunk) => {
      if (!holding && state.holdSubscribe && /subscribe/i.test(chunk.toString('latin1'))) {
        holding = true;
        state.held++;
      }
      if (!holding) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(state, {
    port: (server.address() as net.AddressInfo).port,
    cutAll: () => {
      for (const s of sockets) s.destroy();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  });
}
