import { describe, expect, it } from 'vitest';
import { TenantGate } from '../../src/core/state/attachments/text/tenant-gate.js';

// The extraction queue's order (docs/attachment-extraction.md, "Fairness"), one slot wide so the
// order of turns is the order of starts.

describe('TenantGate', () => {
  it('takes turns by domain, then by mailbox within a domain, in arrival order within a mailbox', async () => {
    const gate = new TenantGate(1);
    const started: string[] = [];
    let release!: () => void;
    const blocker = gate.run({ domainId: 'x', mailboxId: 'x' }, () => new Promise<void>((r) => (release = r)));
    const job = (domainId: string, mailboxId: string, name: string) =>
      gate.run({ domainId, mailboxId }, async () => {
        started.push(name);
      });
    // Domain A queues five (four from one mailbox), then domain B one, then A's other mailbox again.
    const jobs = [
      job('A', 'a1', 'a1-1'),
      job('A', 'a1', 'a1-2'),
      job('A', 'a1', 'a1-3'),
      job('A', 'a2', 'a2-1'),
      job('A', 'a1', 'a1-4'),
      job('B', 'b1', 'b1-1'),
      job('A', 'a2', 'a2-2'),
    ];
    expect(gate.load).toEqual({ running: 1, waiting: 7 });
    release();
    await Promise.all([blocker, ...jobs]);
    expect(started).toEqual(['a1-1', 'b1-1', 'a2-1', 'a1-2', 'a2-2', 'a1-3', 'a1-4']);
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });

  it('runs up to its width at once', async () => {
    const gate = new TenantGate(2);
    let running = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        gate.run({ domainId: `d${i % 2}`, mailboxId: 'm' }, async () => {
          most = Math.max(most, ++running);
          await new Promise((r) => setTimeout(r, 10));
          running--;
        }),
      ),
    );
    expect(most).toBe(2);
  });
});
