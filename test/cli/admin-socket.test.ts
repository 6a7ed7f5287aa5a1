import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/base/logger.js';
import { DataDirLockedError, type LockHolder } from '../../src/storage/data-dir-lock.js';
import { startAdminSocket, type AdminCommandHandler } from '../../src/runtime/admin-socket.js';
import { handOff, handOffOrThrow } from '../../src/runtime/admin-socket-client.js';
import { HandedOffCommandError, request } from '../../src/runtime/admin-socket-protocol.js';

// The admin socket itself (src/runtime/admin-socket.ts) and its client, with a handler of the
// test's own: the file's life and mode, the one-request exchange, the client's fallbacks. The
// real commands through a real `serve`: test/cli/admin-handoff.test.ts.

const dirs: string[] = [];
const dataDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'mbx-sock-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const warnings: string[] = [];
const log: Logger = { debug() {}, info() {}, warn: (event) => void warnings.push(event), error() {} };
const echo: AdminCommandHandler = async (req) => ({ exitCode: 0, output: { ran: req.command, args: req.args } });
const lockedBy = (command: string): DataDirLockedError => {
  const holder: LockHolder = { pid: 1, command, host: hostname(), startedAtTs: 0, resourcesDir: null };
  return new DataDirLockedError(
    `the embedded database is in use by pid 1 (mailbox ${command}, since …); stop it first`,
    holder,
  );
};

describe('the admin socket', () => {
  it('is <data dir>/admin.sock, 0600, answers one request per connection, and goes on close', async () => {
    const dir = dataDir();
    const server = await startAdminSocket(dir, echo, log);
    const file = path.join(dir, 'admin.sock');
    expect(server.path).toBe(file);
    expect(lstatSync(file).isSocket()).toBe(true);
    expect(lstatSync(file).mode & 0o777).toBe(0o600);
    expect(await handOff(file, request('token list', ['a@b.example'], {}))).toEqual({
      exitCode: 0,
      output: { ran: 'token list', args: ['a@b.example'] },
    });
    await server.close();
    expect(existsSync(file)).toBe(false);
    expect(await handOff(file, request('token list', [], {}))).toBeNull();
  });

  it('replaces a socket file a killed holder left, and leaves any other file alone', async () => {
    const dir = dataDir();
    const file = path.join(dir, 'admin.sock');
    // A socket file with nobody behind it: what SIGKILL leaves.
    const holder = spawn(process.execPath, [
      '-e',
      `require('node:net').createServer().listen(${JSON.stringify(file)}, () => console.log('up'))`,
    ]);
    await new Promise((r) => holder.stdout.once('data', r));
    holder.kill('SIGKILL');
    await new Promise((r) => holder.once('exit', r));
    await expect(handOff(file, request('x', [], {}))).resolves.toBeNull(); // refused: nobody listens
    const server = await startAdminSocket(dir, echo, log);
    expect(server.path).toBe(file);
    expect((await handOff(file, request('x', [], {})))?.exitCode).toBe(0);
    await server.close();

    const other = dataDir();
    writeFileSync(path.join(other, 'admin.sock'), 'mine');
    warnings.length = 0;
    const none = await startAdminSocket(other, echo, log);
    expect(none.path).toBeNull();
    expect(warnings).toEqual(['admin_socket.unavailable']);
    expect(readFileSync(path.join(other, 'admin.sock'), 'utf8')).toBe('mine');
    await none.close();
  });

  it('takes a request ended by closing the sending side instead of a newline', async () => {
    const dir = dataDir();
    const server = await startAdminSocket(dir, echo, log);
    const answer = await new Promise<string>((resolve) => {
      const conn = net.createConnection(path.join(dir, 'admin.sock'));
      let text = '';
      conn.on('data', (c: Buffer) => (text += c.toString()));
      conn.on('end', () => resolve(text));
      conn.end(JSON.stringify(request('apply', [], { file: '/x.yaml' })));
    });
    expect(JSON.parse(answer)).toEqual({ exitCode: 0, output: { ran: 'apply', args: [] } });
    await server.close();
  });

  it('on close, lets a running command answer and cuts a connection that sent nothing', async () => {
    const dir = dataDir();
    let release!: () => void;
    const slow: AdminCommandHandler = () =>
      new Promise((resolve) => (release = () => resolve({ exitCode: 0, output: 'done' })));
    const server = await startAdminSocket(dir, slow, log);
    const file = path.join(dir, 'admin.sock');
    const silent = net.createConnection(file);
    const cut = new Promise((r) => silent.once('close', r));
    const running = handOff(file, request('apply', [], {}));
    await new Promise((r) => setTimeout(r, 100)); // the request is in
    const closing = server.close();
    await cut;
    release();
    expect(await running).toEqual({ exitCode: 0, output: 'done' });
    await closing;
  });
});

describe('handOffOrThrow', () => {
  it('hands over only when `serve` holds the directory and its socket answers; else the holder error stands', async () => {
    const dir = dataDir();
    const req = request('token list', ['a@b.example'], {});
    const other = new Error('disk full');
    await expect(handOffOrThrow(dir, req, other)).rejects.toBe(other);
    const byApply = lockedBy('apply');
    await expect(handOffOrThrow(dir, req, byApply)).rejects.toBe(byApply);
    const byServe = lockedBy('serve');
    await expect(handOffOrThrow(dir, req, byServe)).rejects.toBe(byServe); // no socket: an older server

    const failing: AdminCommandHandler = async () => ({ exitCode: 1, error: { message: 'No domain b.example' } });
    const server = await startAdminSocket(dir, failing, log);
    const error = await handOffOrThrow(dir, req, byServe).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandedOffCommandError);
    expect(error).toMatchObject({ message: 'No domain b.example', exitCode: 1 });
    await server.close();

    const ok = await startAdminSocket(dir, echo, log);
    expect(await handOffOrThrow(dir, req, byServe)).toEqual({ ran: 'token list', args: ['a@b.example'] });
    await ok.close();
  });

  it('says so when the server ends the connection without an answer', async () => {
    const dir = dataDir();
    const file = path.join(dir, 'admin.sock');
    const mute = net.createServer((conn) => conn.resume().end());
    await new Promise<void>((r) => mute.listen(file, r));
    await expect(handOff(file, request('apply', [], {}))).rejects.toThrow(
      /without an answer; the command may or may not have run/,
    );
    await new Promise<void>((r) => mute.close(() => r()));
  });
});
