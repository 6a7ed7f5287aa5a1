import type net from 'node:net';
import type tls from 'node:tls';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import { SMTPConnection } from 'smtp-server/lib/smtp-connection.js';

/** A reply text that already carries an RFC 3463 enhanced status code. */
const ENHANCED_RE = /^[245]\.\d{1,3}\.\d{1,3} /;

export interface ConnectionPolicy {
  /** Hide AUTH from EHLO and refuse it until STARTTLS completed (RFC 3207 §4, RFC 4954 §4). */
  authNeedsTls: boolean;
}

const connections = new WeakMap<SMTPServerSession, MailboxSmtpConnection>();

/** The connection of a session, for the rare reply that cannot wait for a hook's callback. */
export const connectionOf = (session: SMTPServerSession): MailboxSmtpConnection | undefined => connections.get(session);

/**
 * smtp-server's connection with three adjustments:
 * - replies whose text already starts with an enhanced code (every reply from our error catalog)
 *   are sent as they are, instead of getting a second, generic code derived from the reply code;
 * - before TLS, EHLO does not offer AUTH and AUTH answers 530 5.7.0, unless insecure AUTH was
 *   explicitly allowed (smtp-server alone would still list AUTH in EHLO);
 * - `abort` answers and hangs up at once (an oversized DATA is not read to its end).
 */
export class MailboxSmtpConnection extends SMTPConnection {
  constructor(server: MailboxSmtpServer, socket: net.Socket | tls.TLSSocket, options?: ConstructorParameters<typeof SMTPConnection>[2]) {
    super(server, socket, options);
    connections.set(this.session, this);
  }

  private get policy(): ConnectionPolicy {
    return (this._server as unknown as MailboxSmtpServer).policy;
  }

  override send(code: number, data?: string | string[] | null, context?: string | false): void {
    super.send(code, data, typeof data === 'string' && ENHANCED_RE.test(data) ? false : context);
  }

  override handler_EHLO(command: Buffer, callback: () => void): void {
    if (!this.policy.authNeedsTls || this.secure) return super.handler_EHLO(command, callback);
    const before = this.session.disabledCommands;
    this.session.disabledCommands = [...this._server.options.disabledCommands, 'AUTH'];
    try {
      super.handler_EHLO(command, callback);
    } finally {
      this.session.disabledCommands = before;
    }
  }

  override handler_AUTH(command: Buffer, callback: () => void): void {
    if (this.policy.authNeedsTls && !this.secure) {
      this.send(530, '5.7.0 Must issue a STARTTLS command first');
      return callback();
    }
    super.handler_AUTH(command, callback);
  }

  /** Sends a final reply and closes the connection without reading further input. */
  abort(code: number, text: string): void {
    this.send(code, text);
    this.close();
  }
}

/** smtp-server with MailboxSmtpConnection and a connection policy. */
export class MailboxSmtpServer extends SMTPServer {
  constructor(options: SMTPServerOptions, readonly policy: ConnectionPolicy) {
    super(options);
  }

  override connect(socket: net.Socket | tls.TLSSocket, socketOptions?: ConstructorParameters<typeof SMTPConnection>[2]): void {
    const connection = new MailboxSmtpConnection(this, socket, socketOptions);
    this.connections.add(connection);
    connection.on('error', (err: Error) => this._onError(err));
    connection.on('connect', (info: unknown) => this.emit('connect', info));
    connection.init();
  }
}
