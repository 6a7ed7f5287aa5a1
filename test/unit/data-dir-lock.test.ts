import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DataDirLockedError, lockDataDir } from '../../src/storage/data-dir-lock.js';

// One process per embedded data directory (docs/api.md, "Embedded storage lock").

const dir = () => path.join(mkdtempSync(path.join(tmpdir(), 'mbx-lock-')), 'pglite');
const holderFile = (d: string, pid: number, command = 'serve', resourcesDir: string | null = null) =>
  writeFileSync(`${d}.lock`, JSON.stringify({ pid, command, host: hostname(), startedAtTs: 0, resourcesDir }));

describe('lockDataDir', () => {
  it('creates the lock with our pid, refuses a second holder, and releases', () => {
    const d = dir();
    const release = lockDataDir(d, { command: 'serve', resourcesDir: null });
    expect(JSON.parse(readFileSync(`${d}.lock`, 'utf8'))).toMatchObject({ pid: process.pid, command: 'serve' });
    expect(() => lockDataDir(d, { command: 'migrate', resourcesDir: null })).toThrow(
      new RegExp(`in use by pid ${process.pid} \\(mailbox serve, since .*\\); stop it first$`),
    );
    release();
    expect(existsSync(`${d}.lock`)).toBe(false);
    lockDataDir(d, { command: 'migrate', resourcesDir: null })();
  });

  it('takes over the lock of a process that is gone (kill -9), and of a half-written file', async () => {
    const d = dir();
    const child = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => child.once('exit', r));
    holderFile(d, child.pid!);
    const release = lockDataDir(d, { command: 'serve', resourcesDir: null });
    expect(JSON.parse(readFileSync(`${d}.lock`, 'utf8')).pid).toBe(process.pid);
    release();
    writeFileSync(`${d}.lock`, '{"pid":');
    lockDataDir(d, { command: 'serve', resourcesDir: null })();
  });

  it('tells `apply` to use MAILBOX_RESOURCES_DIR of the running server instead', async () => {
    const d = dir();
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      holderFile(d, child.pid!, 'serve', '/srv/resources');
      const err = (() => {
        try {
          lockDataDir(d, { command: 'apply', resourcesDir: null });
        } catch (e) {
          return e;
        }
      })() as DataDirLockedError;
      expect(err).toBeInstanceOf(DataDirLockedError);
      expect(err.message).toMatch(
        new RegExp(
          `^the embedded server pid ${child.pid} \\(mailbox serve, .*drop the file into MAILBOX_RESOURCES_DIR \\(/srv/resources\\) instead`,
        ),
      );
      expect(err.message).not.toContain('\n');
      holderFile(d, child.pid!, 'serve', null);
      expect(() => lockDataDir(d, { command: 'apply', resourcesDir: null })).toThrow(
        /restart it with MAILBOX_RESOURCES_DIR set and drop the file there instead/,
      );
    } finally {
      child.kill('SIGKILL');
    }
  });
});
