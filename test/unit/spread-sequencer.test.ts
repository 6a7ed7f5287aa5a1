import { describe, expect, it } from 'vitest';
import type { TestSpecification } from 'vitest/node';
import { SpreadSequencer } from '../support/spread-sequencer.js';

// The order vitest.config.ts's sequencer gives: the browser files among the k8s and once files,
// evenly, never next to each other, the rest in Vitest's own order.
const spec = (project: string, file: string) =>
  ({
    project: { name: project, config: { sequence: { groupOrder: 0 }, isolate: project !== 'pglite' } },
    moduleId: `/r/${file}`,
  }) as unknown as TestSpecification;
// No cached results or sizes: Vitest's order is then by project name, files in their given order.
const ctx = { cache: { getFileTestResults: () => undefined, getFileStats: () => undefined }, config: { root: '/r' } };
const order = async (files: TestSpecification[]) =>
  (await new SpreadSequencer(ctx as never).sort(files)).map((f) => `${f.project.name}:${f.moduleId.slice(3)}`);

describe('SpreadSequencer', () => {
  it('spreads the browser files evenly among the k8s and once files', async () => {
    const files = [
      ...['b1', 'b2', 'b3'].map((f) => spec('browser', f)),
      ...['k1', 'k2'].map((f) => spec('k8s', f)),
      ...['o1', 'o2', 'o3', 'o4'].map((f) => spec('once', f)),
      ...['p1', 'p2'].map((f) => spec('pglite', f)),
      spec('reliability', 'r1'),
    ];
    expect(await order(files)).toEqual([
      'browser:b1',
      'k8s:k1',
      'k8s:k2',
      'browser:b2',
      'once:o1',
      'once:o2',
      'browser:b3',
      'once:o3',
      'once:o4',
      'pglite:p1',
      'pglite:p2',
      'reliability:r1',
    ]);
  });

  it('keeps them first where no k8s or once file runs (make test AREA=browser)', async () => {
    expect(await order([spec('pglite', 'p1'), spec('browser', 'b1')])).toEqual(['browser:b1', 'pglite:p1']);
  });
});
