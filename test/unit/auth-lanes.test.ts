import { describe, expect, it } from 'vitest';
import { TokenLookupLanes } from '../../src/core/access/token-lookup-lanes.js';
import { TokenVerdicts } from '../../src/core/access/token-verdicts.js';
import { PasswordHashGate } from '../../src/core/access/password-hash-gate.js';
import { AppError } from '../../src/core/base/errors.js';

// The pieces that bound what one client address costs (docs/api.md, "Authentication throttling").

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('TokenLookupLanes', () => {
  it('runs one query at a time per address, batching what arrives meanwhile, and finds the valid hash among 1 000', async () => {
    const queries: string[][] = [];
    let inFlight = 0;
    let peak = 0;
    const lanes = new TokenLookupLanes<string>(
      async (hashes) => {
        queries.push(hashes);
        peak = Math.max(peak, ++inFlight);
        await sleep(10);
        inFlight--;
        return new Map(hashes.filter((h) => h === 'good').map((h) => [h, `row:${h}`]));
      },
      { maxBatch: 256, throttledIntervalMs: 0 },
    );
    const hashes = Array.from({ length: 1000 }, (_, i) => (i === 700 ? 'good' : `bad${i}`));
    const rows = await Promise.all(hashes.map((h) => lanes.find('192.0.2.1', h, false)));
    expect(rows[700]).toBe('row:good');
    expect(rows.filter((r) => r !== undefined)).toHaveLength(1);
    expect(peak).toBe(1);
    expect(queries.length).toBeLessThanOrEqual(Math.ceil(1000 / 256) + 1);
    expect(Math.max(...queries.map((q) => q.length))).toBeLessThanOrEqual(256);
    expect(lanes.queries).toBe(queries.length);
  });

  it('spaces the queries of a throttled address and keeps other addresses independent', async () => {
    const at: number[] = [];
    const lanes = new TokenLookupLanes<string>(
      async () => {
        at.push(Date.now());
        return new Map();
      },
      { maxBatch: 1, throttledIntervalMs: 100 },
    );
    const t0 = Date.now();
    const free = lanes.find('192.0.2.9', 'x', false).then(() => Date.now() - t0);
    await Promise.all(['a', 'b', 'c', 'd'].map((h) => lanes.find('192.0.2.1', h, true)));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(await free).toBeLessThan(100);
  });

  it('shares one lookup between concurrent finds of one hash and rejects them all when the query fails', async () => {
    let calls = 0;
    const lanes = new TokenLookupLanes<string>(
      async () => {
        calls++;
        throw new Error('database down');
      },
      { maxBatch: 10, throttledIntervalMs: 0 },
    );
    const results = await Promise.allSettled([1, 2, 3].map(() => lanes.find('k', 'same', false)));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(calls).toBe(1);
  });
});

describe('TokenVerdicts', () => {
  it('remembers valid hashes until expiry and unknown hashes for their TTL, bounded in size', async () => {
    const v = new TokenVerdicts({ maxEntries: 2, validTtlMs: 60_000, unknownTtlMs: 50 });
    v.rememberValid('a', new Date(Date.now() + 40));
    v.rememberUnknown('u');
    expect(v.isValid('a')).toBe(true);
    expect(v.isUnknown('u')).toBe(true);
    expect(v.isUnknown('a')).toBe(false);
    await sleep(60);
    expect(v.isValid('a')).toBe(false);
    expect(v.isUnknown('u')).toBe(false);
    v.rememberValid('x', null);
    v.rememberValid('y', null);
    v.rememberValid('z', null);
    expect([v.isValid('x'), v.isValid('y'), v.isValid('z')]).toEqual([false, true, true]);
    v.forget('z');
    expect(v.isValid('z')).toBe(false);
  });
});

describe('PasswordHashGate', () => {
  it('runs at most the caps at once, queues a few per address, refuses the rest with LOGIN_BUSY', async () => {
    const gate = new PasswordHashGate({
      concurrency: 2,
      concurrencyPerAddress: 1,
      maxQueuedPerAddress: 3,
      maxQueued: 100,
    });
    let running = 0;
    let peak = 0;
    const hash = async () => {
      peak = Math.max(peak, ++running);
      await sleep(5);
      running--;
      return true;
    };
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        gate.run(i % 2 ? '192.0.2.1' : '192.0.2.2', hash).then(
          () => 'ok',
          (e: AppError) => e.code,
        ),
      ),
    );
    expect(peak).toBe(2);
    expect(gate.peak).toBe(2);
    // Per address: one running and three queued are served, the rest refused at once.
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(8);
    expect(outcomes.filter((o) => o === 'LOGIN_BUSY')).toHaveLength(42);
    // Afterwards, everything is free again.
    expect(await gate.run('192.0.2.1', hash)).toBe(true);
  });

  it('lets a second address through while the first has its per-address hash running', async () => {
    const gate = new PasswordHashGate({
      concurrency: 2,
      concurrencyPerAddress: 1,
      maxQueuedPerAddress: 100,
      maxQueued: 100,
    });
    const order: string[] = [];
    const job = (name: string, ms: number) => async () => {
      await sleep(ms);
      order.push(name);
    };
    await Promise.all([
      gate.run('192.0.2.1', job('a1', 30)),
      gate.run('192.0.2.1', job('a2', 30)),
      gate.run('192.0.2.1', job('a3', 30)),
      gate.run('192.0.2.2', job('b1', 5)),
    ]);
    expect(order.indexOf('b1')).toBe(0);
  });
});
