import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createPinoLogger } from '../../src/logging/pino-logger.js';

function sink() {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      out.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { out, stream };
}

describe('the pino implementation of the Logger port', () => {
  it('writes one JSON object per line: level, ts, event, the context (tid) and the fields', () => {
    const { out, stream } = sink();
    const log = createPinoLogger('info', { stream, context: () => ({ tid: 'a'.repeat(32) }) });
    log.info('thing.happened', { count: 2 });
    log.debug('hidden.below.level');
    log.error('thing.failed', { err: new Error('boom') });
    expect(out).toHaveLength(2);
    const [first, second] = out.map((l) => JSON.parse(l));
    expect(first).toMatchObject({ level: 'info', event: 'thing.happened', tid: 'a'.repeat(32), count: 2 });
    expect(new Date(first.ts).getTime()).toBeGreaterThan(0);
    expect(second).toMatchObject({ level: 'error', event: 'thing.failed', err: { message: 'boom' } });
    expect(second.err.stack).toContain('boom');
  });

  it('writes pino-pretty lines, not JSON, for a terminal', () => {
    const script =
      "const { createPinoLogger } = await import('./src/logging/pino-logger.ts');" +
      "createPinoLogger('info', { pretty: true }).warn('pretty.line', { answer: 42 });";
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('pretty.line');
    expect(run.stdout.replace(/\u001b\[[0-9;]*m/g, '')).toMatch(/answer: 42/);
    expect(() => JSON.parse(run.stdout.trim().split('\n')[0]!)).toThrow();
  });
});
