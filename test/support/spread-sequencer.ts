import { BaseSequencer, type TestSpecification } from 'vitest/node';

// Vitest runs a project that takes one file at a time after all the others, on one worker: the
// browser files were the last two minutes of `make test` with the other worker idle. This order
// keeps the rest as Vitest sorts it and spreads the SPREAD projects' files among the BESIDE
// projects' files, so they run beside them and, that far apart, in practice one at a time.

/** Projects whose files are spread through the queue instead of forming a run of their own. */
export const SPREAD = ['browser'];
/**
 * Where they go: projects whose files each run in a process of their own (no worker shared with
 * the next file, so nothing is lost by cutting in), take seconds each (so the spread files stay
 * apart) and judge no timings (reliability's figures would feel a Chromium beside them).
 */
export const BESIDE = ['k8s', 'once'];

export class SpreadSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const spread = sorted.filter((f) => SPREAD.includes(f.project.name));
    const rest = sorted.filter((f) => !SPREAD.includes(f.project.name));
    const places = rest.flatMap((f, i) => (BESIDE.includes(f.project.name) ? [i] : []));
    if (places.length === 0) return [...spread, ...rest];
    const at = new Map<number, TestSpecification[]>();
    spread.forEach((f, k) => {
      const place = places[Math.floor((k * places.length) / spread.length)]!;
      at.set(place, [...(at.get(place) ?? []), f]);
    });
    return rest.flatMap((f, i) => [...(at.get(i) ?? []), f]);
  }
}
