import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { shippedNodeFlags } from '../../bench/lib/node-flags.js';

// The V8 flags the service runs with (docs/design/memory.md) are written twice: package.json's
// start script (`npm start`, `make run`, bench/memory) and the image's ENTRYPOINT (the Helm chart
// passes only arguments to it). They must not drift apart.
const ROOT = path.resolve(import.meta.dirname, '../..');

function entrypointFlags(dockerfile: string): string[] {
  const line = dockerfile.split('\n').find((l) => l.startsWith('ENTRYPOINT '));
  const words = JSON.parse(line!.slice('ENTRYPOINT '.length)) as string[];
  expect(words[0]).toBe('node');
  return words.slice(1).filter((w) => w.startsWith('--') && w !== '--import');
}

describe('V8 flags', () => {
  it('npm start and the image start node with the same flags', () => {
    const fromPackage = shippedNodeFlags(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(fromPackage).toContain('--max-semi-space-size=16');
    expect(entrypointFlags(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'))).toEqual(fromPackage);
  });
});
