import net from 'node:net';

/** Wall-clock milliseconds with sub-ms precision, comparable across processes on one host. */
export const nowMs = (): number => performance.timeOrigin + performance.now();

/**
 * A minimal inbound-SMTP client on one persistent connection (RFC 5321: EHLO, then MAIL, RCPT,
 * DATA per message). `send` resolves with two moments: the end of DATA written (the server starts
 * accepting) and its 250 read (accepted); it throws on any other reply.
 */
export class SmtpSender {
  private buf = '';
  private wake: (() => void) | null = null;
  private closed = false;

  private constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      this.buf += d.toString('latin1');
      this.wake?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
    socket.on('error', () => undefined);
  }

  static async open(port: number): Promise<SmtpSender> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const s = new SmtpSender(socket);
    await s.expect(2);
    s.socket.write('EHLO bench.realtime\r\n');
    await s.expect(2);
    return s;
  }

  async send(from: string, to: string, subject: string): Promise<{ dataEnd: number; accepted: number }> {
    this.socket.write(`MAIL FROM:<${from}>\r\n`);
    await this.expect(2);
    this.socket.write(`RCPT TO:<${to}>\r\n`);
    await this.expect(2);
    this.socket.write('DATA\r\n');
    await this.expect(3);
    const message =
      `From: Bench <${from}>\r\nTo: <${to}>\r\nSubject: ${subject}\r\nDate: ${new Date().toUTCString()}\r\n` +
      `Message-ID: <${subject.replace(/\W/g, '')}@bench.realtime>\r\nContent-Type: text/plain\r\n\r\nrealtime bench\r\n.\r\n`;
    this.socket.write(message);
    const dataEnd = nowMs();
    await this.expect(2);
    return { dataEnd, accepted: nowMs() };
  }

  close(): void {
    this.socket.end('QUIT\r\n');
  }

  private async expect(cls: number): Promise<void> {
    for (;;) {
      const m = /^(?:\d{3}-[^\r\n]*\r\n)*(\d)\d{2} [^\r\n]*\r\n/.exec(this.buf);
      if (m) {
        this.buf = this.buf.slice(m[0].length);
        if (Number(m[1]) !== cls) throw new Error(`SMTP: ${m[0].trim()}`);
        return;
      }
      if (this.closed) throw new Error('SMTP connection closed');
      await new Promise<void>((r) => {
        this.wake = () => {
          this.wake = null;
          r();
        };
      });
    }
  }
}
