import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';

const failure = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('loadConfig accepted it');
};

describe('configuration errors', () => {
  it('refuses a DATABASE_URL of another scheme, naming the variable and never echoing the password', () => {
    const message = failure({ DATABASE_URL: 'mysql://app:s3cret-pw@db.internal/mail' });
    expect(message).toContain('DATABASE_URL');
    expect(message).toContain('postgres://');
    expect(message).not.toContain('s3cret-pw');
    expect(failure({ DATABASE_URL: 'postgres//app:s3cret-pw@db' })).not.toContain('s3cret-pw');
  });

  it('never echoes the value of any secret-bearing variable', () => {
    for (const [key, value] of [
      ['REDIS_URL', 'http://default:r3dis-pw@cache:6379'],
      ['SMTP_RELAY_URL', 'not a url with p4ss'],
    ] as const) {
      const message = failure({ [key]: value });
      expect(message).toContain(key);
      expect(message).not.toContain(value);
    }
  });

  it('echoes a harmless value, so the mistake is visible', () => {
    expect(failure({ PORT: 'eighty' })).toContain('PORT="eighty"');
  });

  it('accepts postgres:// and postgresql:// URLs', () => {
    expect(loadConfig({ DATABASE_URL: 'postgresql://u:p@h:5432/d' }).DATABASE_URL).toBe('postgresql://u:p@h:5432/d');
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p@h/d' }).blobStore).toBe('postgres');
  });
});
