import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/config.js';

describe('docs/configuration.md', () => {
  it('documents every variable the service reads', () => {
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    const missing = Object.keys(configSchema.shape).filter((key) => !doc.includes(`| \`${key}\``));
    expect(missing).toEqual([]);
  });
});
