import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

export const TIMELINE_FILE = path.join(import.meta.dirname, '../../test-results/timeline.json');

/**
 * Writes when each test file started and ended in the run (seconds from the run's start), with its
 * project, to test-results/timeline.json: where a run's minutes go, and whether one worker waited
 * idle at the end behind a long file.
 */
export default class TimelineReporter implements Reporter {
  private t0 = 0;
  private readonly started = new Map<string, number>();
  private readonly files: { project: string; file: string; start: number; end: number }[] = [];

  onTestRunStart(): void {
    this.t0 = performance.now();
  }

  onTestModuleStart(mod: TestModule): void {
    this.started.set(key(mod), this.seconds());
  }

  onTestModuleEnd(mod: TestModule): void {
    const start = this.started.get(key(mod)) ?? this.seconds();
    this.files.push({ project: mod.project.name, file: relative(mod), start, end: this.seconds() });
  }

  onTestRunEnd(): void {
    mkdirSync(path.dirname(TIMELINE_FILE), { recursive: true });
    writeFileSync(TIMELINE_FILE, `${JSON.stringify({ wall: this.seconds(), files: this.files }, null, 1)}\n`);
  }

  private seconds(): number {
    return Math.round(performance.now() - this.t0) / 1000;
  }
}

const relative = (mod: TestModule) => path.relative(process.cwd(), mod.moduleId);
const key = (mod: TestModule) => `${mod.project.name} ${mod.moduleId}`;
