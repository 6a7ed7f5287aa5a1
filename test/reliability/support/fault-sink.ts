import { SMTPServer, type SMTPServerSession } from 'smtp-server';

// A remote SMTP server that misbehaves on purpose (outbound-faults.test.ts): for a
// seeded share of the transactions it answers 4xx (at RCPT or at the end of DATA) or drops the
// connection in the middle of DATA, and it counts every 250 it gave, per Message-ID, with the
// time, so the test can tell a duplicate from a delivery and correlate it with a worker crash.
// Unlike test/transport/smtp-sink.ts (scripted per test step), the faults here are random.

/** mulberry32: a small seeded PRNG, so a run's sequence of faults can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export type Fault = 'rcpt-4xx' | 'data-4xx' | 'drop-mid-data' | 'none';

export interface FaultRates {
  /** Share of transactions answered 4xx (half at RCPT, half at the end of DATA). */
  tempFail: number;
  /** Share of transactions whose connection is dropped mid-DATA (no final reply). */
  drop: number;
}

export interface Acceptance {
  at: number;
  to: string[];
}

export interface FaultSink {
  port: number;
  /** Every 250 given at the end of DATA, per Message-ID (without angle brackets), in order. */
  accepted: Map<string, Acceptance[]>;
  /** Transactions per fault kind (`none`: answered 250). */
  faults: Record<Fault, number>;
  /** Calls `fn` synchronously when the next message is accepted, 50 ms before its 250 is written (once). */
  onNextAccept(fn: (messageId: string) => void): void;
  close(): Promise<void>;
}

const messageIdOf = (raw: string): string => /^Message-ID:\s*<?([^>\r\n]+)>?/im.exec(raw)?.[1]?.trim() ?? '';

export async function startFaultSink(rates: FaultRates, seed: number): Promise<FaultSink> {
  const random = seededRandom(seed);
  const accepted = new Map<string, Acceptance[]>();
  const faults: Record<Fault, number> = { 'rcpt-4xx': 0, 'data-4xx': 0, 'drop-mid-data': 0, none: 0 };
  const planned = new WeakMap<SMTPServerSession, Fault>();
  const refusedAtRcpt = new WeakSet<SMTPServerSession>();
  let hook: ((messageId: string) => void) | null = null;
  const reply = (text: string) => Object.assign(new Error(text.slice(4)), { responseCode: Number(text.slice(0, 3)) });
  const server: SMTPServer = new SMTPServer({
    logger: false,
    disableReverseLookup: true,
    hideSTARTTLS: true,
    authOptional: true,
    disabledCommands: ['AUTH'],
    size: 50 * 1024 * 1024,
    onMailFrom(_address, session, cb) {
      // One roll per transaction (a delivery attempt).
      const r = random();
      const half = rates.tempFail / 2;
      const fault: Fault =
        r < half
          ? 'rcpt-4xx'
          : r < rates.tempFail
            ? 'data-4xx'
            : r < rates.tempFail + rates.drop
              ? 'drop-mid-data'
              : 'none';
      planned.set(session, fault);
      refusedAtRcpt.delete(session);
      cb();
    },
    onRcptTo(_address, session, cb) {
      if (planned.get(session) !== 'rcpt-4xx') return cb();
      // Counted once per transaction, whatever the number of recipients.
      if (!refusedAtRcpt.has(session)) faults['rcpt-4xx']++;
      refusedAtRcpt.add(session);
      cb(reply('450 4.2.1 Mailbox temporarily unavailable (injected fault)'));
    },
    onData(stream, session, cb) {
      const fault = planned.get(session);
      const chunks: Buffer[] = [];
      let dropped = false;
      stream.on('data', (c: Buffer) => {
        chunks.push(c);
        if (fault === 'drop-mid-data' && !dropped) {
          dropped = true;
          faults['drop-mid-data']++;
          for (const conn of (
            server as unknown as { connections: Set<{ session: SMTPServerSession; _socket: { destroy(): void } }> }
          ).connections) {
            if (conn.session === session) conn._socket.destroy();
          }
        }
      });
      stream.on('end', () => {
        if (dropped) return;
        if (fault === 'data-4xx') {
          faults['data-4xx']++;
          return cb(reply('451 4.3.0 Temporary failure, try again (injected fault)'));
        }
        const messageId = messageIdOf(Buffer.concat(chunks).toString('latin1'));
        faults.none++;
        const list = accepted.get(messageId) ?? [];
        list.push({ at: Date.now(), to: session.envelope.rcptTo.map((r) => r.address) });
        accepted.set(messageId, list);
        const fn = hook;
        hook = null;
        if (!fn) return cb(null, 'Ok: queued by fault sink');
        // Armed: the message is accepted here (a remote that committed it), the hook kills the
        // worker, and only then does the 250 go out, so the crash deterministically beats the
        // worker's record of it instead of racing it.
        fn(messageId);
        setTimeout(() => cb(null, 'Ok: queued by fault sink'), 50);
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.server.address() as { port: number }).port,
    accepted,
    faults,
    onNextAccept(fn) {
      hook = fn;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
