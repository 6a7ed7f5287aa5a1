import { io, type Socket } from 'socket.io-client';
import type { MailboxEvent } from '../../src/types/mailbox-event.js';
import { EVENT_TYPES } from '../../src/types/mailbox-event.js';

export const HUB_PATH = '/hubs/mailbox-events';

export interface ConnectOptions {
  auth?: Record<string, unknown>;
  headers?: Record<string, string>;
  query?: Record<string, string>;
  reconnection?: boolean;
}

/** A socket.io-client socket on the hub, websocket only (as integrations run it). */
export function connect(url: string, o: ConnectOptions = {}): Socket {
  return io(url, {
    path: HUB_PATH,
    transports: ['websocket'],
    forceNew: true,
    reconnection: o.reconnection ?? false,
    reconnectionDelay: 100,
    reconnectionDelayMax: 500,
    auth: o.auth ?? {},
    ...(o.headers ? { extraHeaders: o.headers } : {}),
    ...(o.query ? { query: o.query } : {}),
  });
}

/** The `data` of the connect_error a refused handshake ends with. */
export function refusal(socket: Socket, timeoutMs = 5000): Promise<{ code: number; errMsg: string }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('no connect_error'));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.close();
      reject(new Error('connected, expected a refusal'));
    });
    socket.once('connect_error', (err: Error & { data?: { code: number; errMsg: string } }) => {
      clearTimeout(timer);
      socket.close();
      resolve(err.data ?? { code: -1, errMsg: err.message });
    });
  });
}

/** Records every event a socket receives, in order, and waits for conditions on them. */
export class Recorder {
  readonly events: MailboxEvent[] = [];
  readonly all: Array<{ name: string; payload: any }> = [];
  private readonly waiters: Array<() => void> = [];

  constructor(readonly socket: Socket) {
    socket.onAny((name: string, payload: any) => {
      this.all.push({ name, payload });
      if ((EVENT_TYPES as readonly string[]).includes(name)) {
        this.events.push(payload);
        // A client keeps its position so a reconnect replays exactly what it missed.
        (socket.auth as Record<string, unknown>).lastEventId = payload.eventId;
      }
      for (const w of this.waiters.splice(0)) w();
    });
  }

  named(name: string): any[] {
    return this.all.filter((e) => e.name === name).map((e) => e.payload);
  }

  seqs(): number[] {
    return this.events.map((e) => Number(e.eventId));
  }

  async until(predicate: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `timed out waiting for ${what}; got ${JSON.stringify(this.all.map((e) => [e.name, e.payload?.eventId ?? e.payload?.lastEventId]))}`,
        );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Resolves with the n-th subscription.ready (the replay is over, live events follow). */
  async ready(n = 1, timeoutMs = 10_000): Promise<{ mailboxId: string; mailboxAddress: string; lastEventId: string }> {
    await this.until(() => this.named('subscription.ready').length >= n, timeoutMs, `subscription.ready #${n}`);
    return this.named('subscription.ready')[n - 1];
  }
}

/** Connects and waits until the subscription is live. */
export async function subscribe(url: string, o: ConnectOptions = {}): Promise<Recorder> {
  const socket = connect(url, o);
  const rec = new Recorder(socket);
  await rec.ready();
  return rec;
}
