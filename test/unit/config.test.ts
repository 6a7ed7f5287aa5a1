import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';

describe('configuration', () => {
  it('has embedded defaults for every value', () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(8080);
    expect(c.SMTP_SUBMISSION_PORT).toBe(587);
    expect(c.SMTP_MX_PORT).toBe(25);
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.blobStore).toBe('fs');
    expect(c.TOKEN_REVEAL_WINDOW).toBe(24 * 3600 * 1000);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('switches blobs to PostgreSQL with DATABASE_URL and parses durations', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://u@h/db', TOKEN_REVEAL_WINDOW: '15m', WORKER_LEASE: '30s' });
    expect(c.blobStore).toBe('postgres');
    expect(c.TOKEN_REVEAL_WINDOW).toBe(900_000);
    expect(c.WORKER_LEASE).toBe(30_000);
  });

  it('refuses a bad value with one line naming the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/^invalid PORT="eighty": /);
    expect(() => loadConfig({ TOKEN_REVEAL_WINDOW: 'soon' })).toThrow(/TOKEN_REVEAL_WINDOW/);
    expect(() => loadConfig({ DATABASE_URL: 'not a url' })).toThrow(/DATABASE_URL/);
  });
});
