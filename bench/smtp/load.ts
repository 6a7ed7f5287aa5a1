import net from 'node:net';
import tls from 'node:tls';

/** Who one client is: its envelope and, for submission, its credentials. */
export interface ClientIdentity {
  from: string;
  to: string;
  auth?: { user: string; pass: string };
}

export interface LoadOptions {
  port: number;
  clients: number;
  seconds: number;
  /** STARTTLS when the server offers it (submission); plaintext otherwise (inbound). */
  starttls: boolean;
  /** Client i's envelope and credentials (AUTH PLAIN is used when the server offers it). */
  identity: (i: number) => ClientIdentity;
  /**
   * Messages per second over all clients, each client keeping its share on a fixed schedule (a
   * client behind it sends at once, as fast as the server answers); unset, as fast as answered.
   */
  ratePerSecond?: number;
}

export interface LoadFigures {
  messages: number;
  rate: number;
  p50: number;
  p99: number;
  errors: number;
  firstError: string | null;
}

/** A minimal SMTP client: one reply at a time, PIPELINING for MAIL/RCPT/DATA when offered. */
class Client {
  private buf = '';
  private waiting: (() => void) | null = null;
  private closed = false;

  private constructor(private socket: net.Socket) {
    this.attach(socket);
  }

  static async open(port: number): Promise<Client> {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const c = new Client(socket);
    await c.expect(2);
    return c;
  }

  private attach(s: net.Socket): void {
    s.on('data', (d: Buffer) => {
      this.buf += d.toString('latin1');
      this.waiting?.();
    });
    s.on('close', () => {
      this.closed = true;
      this.waiting?.();
    });
    s.on('error', () => undefined);
  }

  async reply(): Promise<string> {
    for (;;) {
      const m = /^(?:\d{3}-[^\r\n]*\r\n)*\d{3} [^\r\n]*\r\n/.exec(this.buf);
      if (m) {
        this.buf = this.buf.slice(m[0].length);
        return m[0];
      }
      if (this.closed) throw new Error(`connection closed (${this.buf.trim()})`);
      await new Promise<void>((r) => {
        this.waiting = () => {
          this.waiting = null;
          r();
        };
      });
    }
  }

  async expect(cls: number): Promise<string> {
    const r = await this.reply();
    if (Number(r[0]) !== cls) throw new Error(r.trim().split('\r\n').pop());
    return r;
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  async starttls(): Promise<void> {
    this.write('STARTTLS\r\n');
    await this.expect(2);
    this.socket.removeAllListeners('data');
    this.socket.removeAllListeners('close');
    const secure = tls.connect({ socket: this.socket, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => secure.once('secureConnect', resolve).once('error', reject));
    this.socket = secure;
    this.buf = '';
    this.attach(secure);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Dot-stuffs a message and appends the end of DATA (RFC 5321 §4.5.2). */
export const dataBlock = (message: Buffer): Buffer =>
  Buffer.concat([Buffer.from(message.toString('latin1').replace(/\r\n\./g, '\r\n..'), 'latin1'), Buffer.from('.\r\n')]);

async function session(
  o: LoadOptions,
  id: ClientIdentity,
  deadline: number,
  latencies: number[],
  errors: string[],
): Promise<void> {
  const c = await Client.open(o.port);
  try {
    let ehlo = await (c.write('EHLO bench.client\r\n'), c.expect(2));
    if (o.starttls && /STARTTLS/.test(ehlo)) {
      await c.starttls();
      ehlo = await (c.write('EHLO bench.client\r\n'), c.expect(2));
    }
    if (id.auth && /AUTH[ =][^\r\n]*PLAIN/.test(ehlo)) {
      c.write(`AUTH PLAIN ${Buffer.from(`\0${id.auth.user}\0${id.auth.pass}`).toString('base64')}\r\n`);
      await c.expect(2);
    }
    const pipelining = /PIPELINING/.test(ehlo);
    const data = dataBlock(tenKbMessage(id.from, id.to));
    const interval = o.ratePerSecond ? (1000 * o.clients) / o.ratePerSecond : 0;
    const first = performance.now() + Math.random() * interval; // the clients' slots spread over one interval
    for (let sent = 0; Date.now() < deadline; sent++) {
      const slot = first + sent * interval;
      if (slot > performance.now()) await new Promise((r) => setTimeout(r, slot - performance.now()));
      if (Date.now() >= deadline) break;
      const t0 = performance.now();
      try {
        if (pipelining) {
          c.write(`MAIL FROM:<${id.from}>\r\nRCPT TO:<${id.to}>\r\nDATA\r\n`);
          await c.expect(2);
          await c.expect(2);
          await c.expect(3);
        } else {
          c.write(`MAIL FROM:<${id.from}>\r\n`);
          await c.expect(2);
          c.write(`RCPT TO:<${id.to}>\r\n`);
          await c.expect(2);
          c.write('DATA\r\n');
          await c.expect(3);
        }
        c.write(data);
        await c.expect(2);
        latencies.push(performance.now() - t0);
      } catch (err) {
        errors.push((err as Error).message);
        c.write('RSET\r\n');
        await c.reply().catch(() => undefined);
        if (errors.length > 1000) break;
      }
    }
    c.write('QUIT\r\n');
  } finally {
    c.close();
  }
}

const pct = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0;

/** One run of runLoad, with what combineRounds needs to merge it with others. */
export interface LoadRound extends LoadFigures {
  elapsedSeconds: number;
  latencies: number[];
}

/** `clients` connections sending for `seconds`; each measures MAIL FROM → final 250 per message. */
export async function runLoad(o: LoadOptions): Promise<LoadRound> {
  const latencies: number[] = [];
  const errors: string[] = [];
  const start = Date.now();
  const deadline = start + o.seconds * 1000;
  const results = await Promise.allSettled(
    Array.from({ length: o.clients }, (_, i) => session(o, o.identity(i), deadline, latencies, errors)),
  );
  for (const r of results) if (r.status === 'rejected') errors.push(String((r.reason as Error).message));
  const elapsed = (Date.now() - start) / 1000;
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    messages: latencies.length,
    rate: Math.round(latencies.length / elapsed),
    p50: Number(pct(sorted, 50).toFixed(1)),
    p99: Number(pct(sorted, 99).toFixed(1)),
    errors: errors.length,
    firstError: errors[0] ?? null,
    elapsedSeconds: elapsed,
    latencies,
  };
}

/**
 * Rounds of one row as one figure: messages over the rounds' whole time, percentiles of every
 * message's latency, and each round's rate (`rounds`), which shows how much the machine moved.
 */
export function combineRounds(rounds: readonly LoadRound[]): LoadFigures & { rounds: number[] } {
  const sorted = rounds.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const seconds = rounds.reduce((t, r) => t + r.elapsedSeconds, 0);
  return {
    messages: sorted.length,
    rate: Math.round(sorted.length / Math.max(seconds, 0.001)),
    p50: Number(pct(sorted, 50).toFixed(1)),
    p99: Number(pct(sorted, 99).toFixed(1)),
    errors: rounds.reduce((t, r) => t + r.errors, 0),
    firstError: rounds.find((r) => r.firstError !== null)?.firstError ?? null,
    rounds: rounds.map((r) => r.rate),
  };
}

/** A 10 KB text message (headers included) from `from` to `to`. */
export function tenKbMessage(from: string, to: string, size = 10 * 1024): Buffer {
  const head = `From: Bench <${from}>\r\nTo: <${to}>\r\nSubject: bench message\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n`;
  const line =
    'The quick brown fox jumps over the lazy dog; benchmark payload line of seventy-six chars.\r\n'.slice(0, 76) +
    '\r\n';
  let body = '';
  while (head.length + body.length + line.length <= size) body += line;
  return Buffer.from(head + body, 'latin1');
}

/** The DNS stub's records for the bench's sender: SPF passes from loopback, DMARC p=none. */
export const SENDER_RECORDS = {
  'sender.bench': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
  '_dmarc.sender.bench': { TXT: ['v=DMARC1; p=none'] },
};
