import { io, type Socket } from 'socket.io-client';
import { nowMs } from './smtp-sender.js';

// One client process of the benchmark (forked with IPC): opens its share of socket.io-client
// connections, records when each `message.received` arrives, and hands the records back.
export interface ClientSpec {
  url: string;
  auth: Record<string, string>;
}
export type ToClient =
  { cmd: 'connect'; specs: ClientSpec[]; concurrency: number } | { cmd: 'collect' } | { cmd: 'close' };
export type FromClient =
  { ready: number; failed: number; firstError: string | null } | { records: Array<[number, number, number]> };

const sockets: Socket[] = [];
/** [local client index, message number, arrival time in ms]. */
const records: Array<[number, number, number]> = [];
const send = (m: FromClient) => process.send!(m);

function open(spec: ClientSpec, index: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = io(spec.url, {
      path: '/hubs/mailbox-events',
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
      auth: spec.auth,
      timeout: 60_000,
    });
    sockets.push(socket);
    socket.on('message.received', (event: { data: { subject?: string } }) => {
      const m = /^rt-bench (\d+)$/.exec(event.data.subject ?? '');
      if (m) records.push([index, Number(m[1]), nowMs()]);
    });
    socket.once('subscription.ready', () => resolve());
    socket.once('connect_error', (err: Error & { data?: unknown }) =>
      reject(new Error(`${err.message} ${JSON.stringify(err.data ?? '')}`)),
    );
  });
}

async function connectAll(specs: ClientSpec[], concurrency: number): Promise<void> {
  let next = 0;
  let ready = 0;
  const errors: string[] = [];
  const worker = async () => {
    for (let i = next++; i < specs.length; i = next++) {
      await open(specs[i]!, i).then(
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
  send({ ready, failed: errors.length, firstError: errors[0] ?? null });
}

process.on('message', (m: ToClient) => {
  if (m.cmd === 'connect') void connectAll(m.specs, m.concurrency);
  else if (m.cmd === 'collect') send({ records });
  else {
    for (const s of sockets) s.close();
    setTimeout(() => process.exit(0), 100);
  }
});
