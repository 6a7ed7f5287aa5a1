import { io, type Socket } from 'socket.io-client';
import { EVENT_TYPES, type MailboxEvent } from '../../src/types/mailbox-event.js';

// One real-time client process of the soak (forked with IPC): its share of socket.io-client
// connections, each following one mailbox from `subscription.ready` on. It keeps, per socket,
// which event ids arrived (event ids are a gapless per-mailbox sequence), so it can tell a missed
// event from a duplicate; latencies (arrival − occurredAtTs) are handed over at every drain.

export interface SoakClientSpec {
  url: string;
  token: string;
  mailbox: number;
}
export type ToSoakClient =
  | { cmd: 'connect'; specs: SoakClientSpec[]; concurrency: number }
  | { cmd: 'drain' }
  | { cmd: 'verify'; heads: number[] }
  | { cmd: 'close' };
export interface ConnectReply {
  ready: number;
  failed: number;
  firstError: string | null;
}
export interface DrainReply {
  latencies: number[];
  deliveries: number;
  duplicates: number;
  outOfOrder: number;
  disconnects: number;
  firstProblem: string | null;
}
/** Per socket: every id after its `subscription.ready` up to the mailbox head must have arrived. */
export interface VerifyReply {
  sockets: number;
  expected: number;
  missed: number;
  duplicates: number;
  outOfOrder: number;
  firstMissed: string | null;
}
export type FromSoakClient = ConnectReply | DrainReply | VerifyReply;

interface Follower {
  socket: Socket;
  mailbox: number;
  readyAfter: number | null;
  seen: Set<number>;
  last: number;
}

const followers: Follower[] = [];
const typeSet = new Set<string>(EVENT_TYPES);
let window: DrainReply = emptyWindow();
let duplicates = 0;
let outOfOrder = 0;

function emptyWindow(): DrainReply {
  return { latencies: [], deliveries: 0, duplicates: 0, outOfOrder: 0, disconnects: 0, firstProblem: null };
}

function problem(text: string): void {
  window.firstProblem ??= text;
}

function open(spec: SoakClientSpec): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = io(spec.url, {
      path: '/hubs/mailbox-events',
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
      auth: { token: spec.token },
      timeout: 60_000,
    });
    const f: Follower = { socket, mailbox: spec.mailbox, readyAfter: null, seen: new Set(), last: 0 };
    socket.onAny((type: string, event: MailboxEvent) => {
      if (!typeSet.has(type)) return;
      const at = Date.now();
      const id = Number(event.eventId);
      window.deliveries++;
      window.latencies.push(at - event.occurredAtTs);
      if (f.seen.has(id)) {
        window.duplicates++;
        duplicates++;
        problem(`duplicate event ${id} of mailbox ${f.mailbox}`);
      } else f.seen.add(id);
      if (id <= f.last) {
        window.outOfOrder++;
        outOfOrder++;
        problem(`event ${id} after ${f.last} on mailbox ${f.mailbox}`);
      }
      f.last = Math.max(f.last, id);
    });
    socket.on('resync.required', () => problem(`resync.required on mailbox ${f.mailbox}`));
    socket.once('subscription.ready', (r: { lastEventId: string }) => {
      f.readyAfter = Number(r.lastEventId);
      followers.push(f);
      resolve();
    });
    socket.once('connect_error', (err: Error & { data?: unknown }) =>
      reject(new Error(`${err.message} ${JSON.stringify(err.data ?? '')}`)),
    );
    socket.on('disconnect', (reason) => {
      if (f.readyAfter === null) return;
      window.disconnects++;
      problem(`socket of mailbox ${f.mailbox} disconnected: ${reason}`);
    });
  });
}

async function connectAll(specs: SoakClientSpec[], concurrency: number): Promise<ConnectReply> {
  let next = 0;
  let ready = 0;
  const errors: string[] = [];
  const worker = async () => {
    for (let i = next++; i < specs.length; i = next++) {
      await open(specs[i]!).then(
        () => {
          ready++;
        },
        (err: Error) => {
          errors.push(err.message);
        },
      );
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { ready, failed: errors.length, firstError: errors[0] ?? null };
}

function verify(heads: number[]): VerifyReply {
  let expected = 0;
  let missed = 0;
  let firstMissed: string | null = null;
  for (const f of followers) {
    const head = heads[f.mailbox] ?? 0;
    for (let id = f.readyAfter! + 1; id <= head; id++) {
      expected++;
      if (!f.seen.has(id)) {
        missed++;
        firstMissed ??= `event ${id} of mailbox ${f.mailbox} (ready after ${f.readyAfter}, head ${head})`;
      }
    }
  }
  return { sockets: followers.length, expected, missed, duplicates, outOfOrder, firstMissed };
}

const reply = (m: FromSoakClient) => process.send!(m);

process.on('message', (m: ToSoakClient) => {
  if (m.cmd === 'connect') void connectAll(m.specs, m.concurrency).then(reply);
  else if (m.cmd === 'drain') {
    reply(window);
    window = emptyWindow();
  } else if (m.cmd === 'verify') reply(verify(m.heads));
  else {
    for (const f of followers) f.socket.close();
    setTimeout(() => process.exit(0), 100);
  }
});
