import type net from 'node:net';
import { SmtpWire, type Reply } from '../../smtp/smtp-wire.js';

// Driving large or slow SMTP input: messages generated as streams of chunks (nothing huge is
// committed or held whole), written with backpressure, and a probe that keeps asking the API
// while the SMTP side is busy.

/** The socket under a SmtpWire (after STARTTLS, the TLS one), for writing with backpressure. */
export const socketOf = (wire: SmtpWire): net.Socket => (wire as unknown as { socket: net.Socket }).socket;

/** Writes the chunks in ~64 KiB batches, waiting for drain; stops early if the server hangs up. */
export async function pump(
  wire: SmtpWire,
  chunks: Iterable<string | Buffer>,
): Promise<{ bytes: number; complete: boolean }> {
  const socket = socketOf(wire);
  let batch: Buffer[] = [];
  let size = 0;
  let bytes = 0;
  const flush = async (): Promise<boolean> => {
    if (!size) return true;
    if (socket.destroyed || !socket.writable) return false;
    const data = Buffer.concat(batch);
    batch = [];
    size = 0;
    bytes += data.length;
    if (!socket.write(data)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          socket.off('drain', done);
          socket.off('close', done);
          resolve();
        };
        socket.once('drain', done).once('close', done);
      });
    }
    return !socket.destroyed;
  };
  for (const c of chunks) {
    const b = typeof c === 'string' ? Buffer.from(c, 'latin1') : c;
    batch.push(b);
    size += b.length;
    if (size >= 65_536 && !(await flush())) return { bytes, complete: false };
  }
  return { bytes, complete: await flush() };
}

/** The final reply of a DATA transaction whose bytes were pumped, or what became of the connection. */
export async function finalReply(wire: SmtpWire, timeoutMs: number): Promise<string> {
  try {
    return (await wire.reply(timeoutMs)).last;
  } catch (err) {
    return `(no reply: ${(err as Error).message.slice(0, 120)})`;
  }
}

/** MAIL, RCPT, DATA on an open session (the replies each checked). */
export async function openData(wire: SmtpWire, from: string, to: string): Promise<Reply> {
  await wire.cmd(`MAIL FROM:<${from}>`, 250);
  await wire.cmd(`RCPT TO:<${to}>`, 250);
  return wire.cmd('DATA', 354);
}

export interface ProbeResult {
  requests: number;
  answered: number;
  maxMs: number;
  failures: string[];
}

/**
 * Asks GET /healthz and an authenticated GET every `everyMs` until stopped. A request counts as
 * answered when it got its 200 within `timeoutMs`.
 */
export function apiProbe(
  baseUrl: string,
  token: string,
  everyMs = 200,
  timeoutMs = 10_000,
): { stop(): Promise<ProbeResult> } {
  const result: ProbeResult = { requests: 0, answered: 0, maxMs: 0, failures: [] };
  let running = true;
  const one = async (path: string, headers: Record<string, string>) => {
    const t0 = performance.now();
    result.requests++;
    try {
      const res = await fetch(baseUrl + path, { headers, signal: AbortSignal.timeout(timeoutMs) });
      await res.arrayBuffer();
      const ms = performance.now() - t0;
      result.maxMs = Math.max(result.maxMs, Math.round(ms));
      if (res.status === 200) result.answered++;
      else result.failures.push(`${path} ${res.status}`);
    } catch (err) {
      result.maxMs = Math.max(result.maxMs, Math.round(performance.now() - t0));
      result.failures.push(`${path} ${(err as Error).message}`);
    }
  };
  const loop = (async () => {
    while (running) {
      await Promise.all([
        one('/healthz', {}),
        one('/api/messages?limit=1', { authorization: `Bearer ${token}` }),
        new Promise((r) => setTimeout(r, everyMs)),
      ]);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return result;
    },
  };
}
