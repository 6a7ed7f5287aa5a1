import net from 'node:net';
import { DataDirLockedError } from '../storage/data-dir-lock.js';
import {
  HandedOffCommandError,
  bindableAddress,
  decodeAnswer,
  encodeRequest,
  socketPath,
  type HandoffAnswer,
  type HandoffRequest,
} from './admin-socket-protocol.js';

/**
 * A command that could not open the embedded database because `mailbox serve` holds it goes to that
 * server's admin socket: returns what the command returned there, throws what it failed with there
 * (HandedOffCommandError, with its exit status). Any other failure to open, or a holder that is not
 * `serve`, or a socket that is absent or refuses (an older server), rethrows the original error:
 * the one line naming the holder.
 */
export async function handOffOrThrow(dataDir: string, req: HandoffRequest, openError: unknown): Promise<unknown> {
  if (!(openError instanceof DataDirLockedError) || openError.holder.command !== 'serve') throw openError;
  const answer = await handOff(socketPath(dataDir), req);
  if (!answer) throw openError;
  if ('error' in answer) throw new HandedOffCommandError(answer.error.message, answer.exitCode);
  return answer.output;
}

/** One request, one answer; null when nothing accepts the connection. */
export function handOff(file: string, req: HandoffRequest): Promise<HandoffAnswer | null> {
  const address = bindableAddress(file);
  if (!address) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(address);
    const chunks: Buffer[] = [];
    let connected = false;
    socket.once('connect', () => {
      connected = true;
      socket.write(encodeRequest(req));
    });
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // After an answer or a failure, later errors of a closing socket change nothing.
    socket.on('error', (err) => {
      if (!connected) resolve(null);
      else reject(new Error(`the running server's admin socket ${file} failed: ${err.message}`));
    });
    socket.once('end', () => {
      try {
        resolve(decodeAnswer(Buffer.concat(chunks).toString('utf8')));
      } catch {
        // The server stopped (or was killed) while the command ran: whether it took effect is unknown.
        reject(new Error(`the running server closed ${file} without an answer; the command may or may not have run`));
      }
      socket.destroy();
    });
  });
}
