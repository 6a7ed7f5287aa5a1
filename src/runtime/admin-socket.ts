import net from 'node:net';
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import type { Logger } from '../core/base/logger.js';
import {
  HandoffProtocolError,
  MAX_REQUEST_BYTES,
  bindableAddress,
  decodeRequest,
  encodeAnswer,
  failure,
  socketPath,
  type HandoffAnswer,
  type HandoffRequest,
} from './admin-socket-protocol.js';

/** A client has this long to send its request line; what it asked for then runs as long as it takes. */
const RECEIVE_TIMEOUT_MS = 10_000;
/** On close, commands already running get this long to answer before their connections are cut. */
const CLOSE_WAIT_MS = 10_000;

/** Answers one request; a command's failure is an answer too (`failure`), so this rarely throws. */
export type AdminCommandHandler = (req: HandoffRequest) => Promise<HandoffAnswer>;

export interface AdminSocket {
  /** The socket file, or null when the server could not listen (the CLI then says who holds the directory). */
  path: string | null;
  close(): Promise<void>;
}

/**
 * `<data dir>/admin.sock`, mode 0600, for the process holding the embedded data directory: one
 * request per connection, answered by `handle`. Holding the directory's lock is what makes a
 * socket file already there stale (a killed server's), so it is replaced. Who may connect is the
 * file system's answer: the file is its owner's alone, like the data directory with the secrets.
 * Failing to listen is logged and leaves the server running without a hand-off.
 */
export async function startAdminSocket(
  dataDir: string,
  handle: AdminCommandHandler,
  log: Logger,
): Promise<AdminSocket> {
  const file = socketPath(dataDir);
  const none: AdminSocket = { path: null, close: async () => undefined };
  const address = bindableAddress(file);
  if (!address) {
    log.warn('admin_socket.unavailable', { path: file, reason: 'the path is too long for a Unix socket' });
    return none;
  }
  try {
    removeStale(file);
  } catch (err) {
    log.warn('admin_socket.unavailable', { path: file, reason: (err as Error).message });
    return none;
  }
  const busy = new Map<net.Socket, boolean>();
  const server = net.createServer({ allowHalfOpen: true }, (socket) => serveConnection(socket, handle, busy));
  try {
    await listenPrivately(server, address);
    chmodSync(file, 0o600);
  } catch (err) {
    server.close();
    log.warn('admin_socket.unavailable', { path: file, reason: (err as Error).message });
    return none;
  }
  const inode = lstatSync(file).ino;
  // On an exit without close, the file goes like the lock does; only ours (the next holder makes its own).
  const removeOurs = () => {
    try {
      if (lstatSync(file).ino === inode) unlinkSync(file);
    } catch {
      /* already gone */
    }
  };
  process.on('exit', removeOurs);
  log.info('admin_socket.listening', { path: file });
  return {
    path: file,
    async close() {
      process.off('exit', removeOurs);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const [socket, running] of busy) if (!running) socket.destroy();
      const waited = await Promise.race([closed.then(() => true), sleep(CLOSE_WAIT_MS).then(() => false)]);
      if (!waited) for (const socket of busy.keys()) socket.destroy();
      await closed;
      removeOurs();
    },
  };
}

function removeStale(file: string): void {
  let stat;
  try {
    stat = lstatSync(file);
  } catch {
    return;
  }
  if (!stat.isSocket()) throw new Error(`${file} exists and is not a socket; remove it`);
  unlinkSync(file);
}

function listenPrivately(server: net.Server, address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      resolve();
    };
    // bind(2) creates the file 0777 & ~umask, synchronously inside listen(): with this umask it is
    // 0600 from its first moment, not after a chmod. (A worker thread may not set the umask: the
    // chmod after listening is then the only guard.)
    let previous: number | null = null;
    try {
      previous = process.umask(0o177);
    } catch {
      /* not the main thread */
    }
    try {
      server.listen(address, done);
    } finally {
      if (previous !== null) process.umask(previous);
    }
  });
}

function serveConnection(socket: net.Socket, handle: AdminCommandHandler, busy: Map<net.Socket, boolean>): void {
  busy.set(socket, false);
  socket.once('close', () => busy.delete(socket));
  socket.on('error', () => undefined);
  socket.setTimeout(RECEIVE_TIMEOUT_MS, () => socket.destroy());
  const answer = (a: HandoffAnswer) => socket.end(encodeAnswer(a), () => socket.destroy());
  const chunks: Buffer[] = [];
  let size = 0;
  let received = false;
  const onRequest = () => {
    if (received) return;
    received = true;
    socket.off('data', onData);
    socket.setTimeout(0);
    let req: HandoffRequest;
    try {
      req = decodeRequest(Buffer.concat(chunks).toString('utf8'));
    } catch (err) {
      answer(failure(err));
      return;
    }
    busy.set(socket, true);
    handle(req).then(answer, (err: unknown) => answer(failure(err)));
  };
  // The request is the first line (a client may instead end its side after it).
  const onData = (chunk: Buffer) => {
    const newline = chunk.indexOf(0x0a);
    const part = newline === -1 ? chunk : chunk.subarray(0, newline);
    size += part.length;
    if (size > MAX_REQUEST_BYTES) {
      received = true;
      socket.off('data', onData);
      answer(failure(new HandoffProtocolError(`request too large: more than ${MAX_REQUEST_BYTES} bytes`)));
      return;
    }
    chunks.push(part);
    if (newline !== -1) onRequest();
  };
  socket.on('data', onData);
  socket.once('end', onRequest);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
