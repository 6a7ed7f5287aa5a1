import net from 'node:net';
import tls from 'node:tls';
import { deliveredAfter } from '../support/intake-queue.js';

export interface Reply {
  code: number;
  /** Every line's text after the code and separator. */
  lines: string[];
  /** The last line as sent, e.g. `535 5.7.8 Authentication credentials invalid`. */
  last: string;
}

/**
 * A raw SMTP client for protocol edges, so tests read like the conversation
 * (`await s.cmd('RCPT TO:<a@b>', '550 5.1.1')`). It sends exactly the bytes it is given.
 */
export class SmtpWire {
  private buffer = '';
  private waiters: Array<() => void> = [];
  private ended = false;
  /**
   * Queued intake: after a 250 naming a queued message on port 587, `reply` resolves once the
   * message is written (deliveredAfter), so the conversation reads like one that stores before
   * its 250. Off for a test that looks at the queue itself.
   */
  awaitQueued = true;

  private constructor(
    private socket: net.Socket | tls.TLSSocket,
    private readonly port: number,
  ) {
    this.attach(socket);
  }

  /** `localAddress` binds the client side (e.g. 127.0.0.2: a second client address on loopback). */
  static async connect(port: number, greeting: number | string | null = 220, localAddress?: string): Promise<SmtpWire> {
    const socket = net.connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const wire = new SmtpWire(socket, port);
    if (greeting !== null) await wire.expect(greeting);
    return wire;
  }

  private attach(socket: net.Socket | tls.TLSSocket): void {
    socket.on('data', (d: Buffer) => {
      this.buffer += d.toString('latin1');
      this.notify();
    });
    socket.on('close', () => {
      this.ended = true;
      this.notify();
    });
    socket.on('error', () => undefined);
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Reads one complete (possibly multi-line) reply. */
  async reply(timeoutMs = 10_000): Promise<Reply> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = /^(?:\d{3}-[^\r\n]*\r\n)*(\d{3}) ([^\r\n]*)\r\n/.exec(this.buffer);
      if (m) {
        const block = m[0];
        this.buffer = this.buffer.slice(block.length);
        const lines = block.split('\r\n').filter(Boolean);
        const last = lines[lines.length - 1]!;
        if (this.awaitQueued && /^250 .* as msg_/.test(last)) await deliveredAfter(this.port, last);
        return { code: Number(m[1]), lines: lines.map((l) => l.slice(4)), last };
      }
      if (this.ended) throw new Error(`connection closed; unread: ${JSON.stringify(this.buffer)}`);
      if (Date.now() > deadline) throw new Error(`no reply; unread: ${JSON.stringify(this.buffer)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Reads a reply and checks it starts with `prefix` (`250`, `535 5.7.8 …`). */
  async expect(prefix: number | string): Promise<Reply> {
    const r = await this.reply();
    if (!r.last.startsWith(String(prefix)))
      throw new Error(`expected ${prefix}, got ${r.lines.length > 1 ? JSON.stringify(r.lines) : r.last}`);
    return r;
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Sends one command line and, when `prefix` is given, checks the reply. */
  async cmd(line: string, prefix?: number | string): Promise<Reply> {
    this.write(`${line}\r\n`);
    return prefix === undefined ? this.reply() : this.expect(prefix);
  }

  async ehlo(name = 'client.test'): Promise<string[]> {
    return (await this.cmd(`EHLO ${name}`, 250)).lines;
  }

  /** STARTTLS and the handshake; the server's certificate is accepted as it is. */
  async starttls(): Promise<void> {
    await this.cmd('STARTTLS', 220);
    const plain = this.socket;
    plain.removeAllListeners('data');
    plain.removeAllListeners('close');
    const secure = tls.connect({ socket: plain, rejectUnauthorized: false, minVersion: 'TLSv1.2' });
    await new Promise<void>((resolve, reject) => secure.once('secureConnect', resolve).once('error', reject));
    this.socket = secure;
    this.buffer = '';
    this.attach(secure);
  }

  get tlsProtocol(): string | null {
    return this.socket instanceof tls.TLSSocket ? this.socket.getProtocol() : null;
  }

  /** EHLO, STARTTLS, EHLO, AUTH PLAIN; returns the AUTH reply. */
  async login(user: string, pass: string, method: 'PLAIN' | 'LOGIN' = 'PLAIN'): Promise<Reply> {
    await this.ehlo();
    await this.starttls();
    await this.ehlo();
    return this.auth(user, pass, method);
  }

  async auth(user: string, pass: string, method: 'PLAIN' | 'LOGIN' = 'PLAIN'): Promise<Reply> {
    if (method === 'PLAIN') return this.cmd(`AUTH PLAIN ${Buffer.from(`\0${user}\0${pass}`).toString('base64')}`);
    await this.cmd('AUTH LOGIN', 334);
    await this.cmd(Buffer.from(user).toString('base64'), 334);
    return this.cmd(Buffer.from(pass).toString('base64'));
  }

  /** Resolves true once the server closed the connection (within `ms`). */
  async closed(ms = 5_000): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!this.ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return this.ended;
  }

  close(): void {
    this.socket.destroy();
  }
}

/** A minimal RFC 5322 message with CRLF line endings. */
export function rfc5322(o: { from: string; to: string; subject?: string; body?: string; headers?: string[] }): string {
  return [
    `From: ${o.from}`,
    `To: ${o.to}`,
    `Subject: ${o.subject ?? 'Wire test'}`,
    'Date: Mon, 02 Nov 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    ...(o.headers ?? []),
    '',
    o.body ?? 'Hello over the wire.',
    '',
  ].join('\r\n');
}
