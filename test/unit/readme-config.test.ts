import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/config.js';

describe('README configuration table', () => {
  it('documents every variable the service reads', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const missing = Object.keys(configSchema.shape).filter((key) => !readme.includes(`| \`${key}\``));
    expect(missing).toEqual([]);
  });
});
