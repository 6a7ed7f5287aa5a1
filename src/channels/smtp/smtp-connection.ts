import type net from 'node:net';
import type tls from 'node:tls';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import { SMTPConnection } from 'smtp-server/lib/smtp-connection.js';
import type { ErrorCode } from '../../core/base/errors.js';
import { catalogReply } from './replies.js';

/** Longest command line, CRLF included (RFC 5321 §4.5.3.1.4). */
const MAX_COMMAND_OCTETS = 512;
/** A reply text that already carries an RFC 3463 enhanced status code. */
const ENHANCED_RE = /^[245]\.\d{1,3}\.\d{1,3} /;
/** What smtp-server says when it is closing (to commands after close() and at its close timeout). */
const SHUTTING_DOWN = 'Server shutting down';
/** What smtp-server says when maxClients (SMTP_MAX_CONNECTIONS) is reached, after the host name. */
const MAX_CLIENTS_TEXT = 'Too many connected clients, try again in a moment';

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
 * - a command line over 512 octets answers 500 5.5.2 (AUTH excepted, see `_onCommand`);
 * - `abort` answers and hangs up at once (an oversized DATA is not read to its end);
 * - the shutdown reply is `421 4.3.2` (RFC 3463 §3.4 "system not accepting network messages",
 *   RFC 5321 §3.8) instead of smtp-server's generic 4.4.2, so a client knows to retry elsewhere;
 * - replies made in one turn of the event loop leave in one write (`batchReplies`).
 */
export class MailboxSmtpConnection extends SMTPConnection {
  constructor(
    server: MailboxSmtpServer,
    socket: net.Socket | tls.TLSSocket,
    options?: ConstructorParameters<typeof SMTPConnection>[2],
  ) {
    super(server, socket, options);
    connections.set(this.session, this);
  }

  private get policy(): ConnectionPolicy {
    return (this._server as unknown as MailboxSmtpServer).policy;
  }

  /** The socket whose replies are held until the end of this turn of the event loop. */
  private replyBatch: net.Socket | null = null;
  /** Set while STARTTLS answers: its 220 must be on the wire before the handshake, alone. */
  private unbatched = false;

  override send(code: number, data?: string | string[] | null, context?: string | false): void {
    if (code === 421 && data === SHUTTING_DOWN) return this.sendCatalog('SHUTTING_DOWN');
    // SMTP_MAX_CONNECTIONS reached: the same reply as the per-client cap.
    if (code === 421 && data === `${this.name} ${MAX_CLIENTS_TEXT}`) return this.sendCatalog('TOO_MANY_CONNECTIONS');
    this.batchReplies();
    super.send(code, data, typeof data === 'string' && ENHANCED_RE.test(data) ? false : context);
  }

  /**
   * Holds the replies made in this turn of the event loop (a pipelined MAIL FROM, RCPT TO and
   * DATA answered together, RFC 2920) and sends them in one write at its end: one TLS record and
   * one system call instead of one each (bench/smtp). Closing flushes them (`end` uncorks).
   */
  private batchReplies(): void {
    const socket = this._socket as net.Socket | undefined;
    if (this.replyBatch || this.unbatched || !socket || socket.destroyed) return;
    this.replyBatch = socket;
    socket.cork();
    setImmediate(() => {
      this.replyBatch = null;
      socket.uncork();
    });
  }

  override handler_STARTTLS(command: Buffer, callback: () => void): void {
    this.replyBatch?.uncork();
    this.unbatched = true;
    try {
      super.handler_STARTTLS(command, callback);
    } finally {
      this.unbatched = false;
    }
  }

  /** A protocol reply of our own, from the error catalog (smtp-server's callbacks map the rest). */
  sendCatalog(code: ErrorCode): void {
    const reply = catalogReply(code, this.name);
    this.send(reply.code, reply.text);
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

  /**
   * RFC 5321 §4.5.3.1.4: a command line is at most 512 octets with its CRLF, answered as
   * §4.5.3.1.10 suggests ("500 Line too long"); the session goes on. AUTH and its SASL
   * continuations may be up to 12 288 octets (RFC 4954 §4). Past smtp-server's own buffer cap
   * (16 KiB) it answers 421 and hangs up.
   */
  override _onCommand(command: Buffer, callback?: () => void): void {
    if (
      command.length > MAX_COMMAND_OCTETS - 2 &&
      this._ready &&
      !this._upgrading &&
      !this._nextHandler &&
      !/^AUTH\b/i.test(command.subarray(0, 5).toString('latin1'))
    ) {
      this.sendCatalog('COMMAND_TOO_LONG');
      setImmediate(() => this._whenWritable(callback ?? (() => undefined)));
      return;
    }
    super._onCommand(command, callback);
  }

  override handler_AUTH(command: Buffer, callback: () => void): void {
    if (this.policy.authNeedsTls && !this.secure) {
      this.sendCatalog('STARTTLS_REQUIRED');
      return callback();
    }
    super.handler_AUTH(command, callback);
  }

  /** Sends a final reply and closes the connection without reading further input. */
  abort(reply: { code: number; text: string } | ErrorCode): void {
    if (typeof reply === 'string') this.sendCatalog(reply);
    else this.send(reply.code, reply.text);
    this.close();
  }
}

/** smtp-server with MailboxSmtpConnection and a connection policy. */
export class MailboxSmtpServer extends SMTPServer {
  constructor(
    options: SMTPServerOptions,
    readonly policy: ConnectionPolicy,
  ) {
    super(options);
  }

  /** Connections admitted and not yet closed: SMTP_MAX_CONNECTIONS is held against this count. */
  private admitted = 0;

  override connect(
    socket: net.Socket | tls.TLSSocket,
    socketOptions?: ConstructorParameters<typeof SMTPConnection>[2],
  ): void {
    // smtp-server compares its connection set with maxClients after adding each one, and refused
    // connections stay in the set until they close: under a burst the greeted count depends on
    // how fast refusals close (400 of a 1 000-connection burst against a cap of 200 was seen).
    // Counted here, before anything is set up, the cap is exact and a refusal costs one write.
    const max = this.options.maxClients;
    if (max && this.admitted >= max) {
      const reply = catalogReply('TOO_MANY_CONNECTIONS');
      socket.on('error', () => undefined);
      socket.end(`${reply.code} ${reply.text}\r\n`);
      setTimeout(() => socket.destroy(), 5_000).unref(); // a client that never closes its side
      return;
    }
    this.admitted++;
    socket.once('close', () => this.admitted--);
    const connection = new MailboxSmtpConnection(this, socket, socketOptions);
    this.connections.add(connection);
    connection.on('error', (err: Error) => this._onError(err));
    connection.on('connect', (info: unknown) => this.emit('connect', info));
    connection.init();
  }
}
