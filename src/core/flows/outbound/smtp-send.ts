import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { storableText } from '../../base/text.js';
import { envelopeAddress } from '../../base/address.js';

export type RecipientStatusAfterAttempt = 'delivered' | 'deferred' | 'failed';

/** What one attempt did for one recipient, with the remote reply (or our synthetic one). */
export interface Outcome {
  address: string;
  status: RecipientStatusAfterAttempt;
  reply: string;
}

export interface SmtpTarget {
  host: string;
  port: number;
  /** Implicit TLS (smtps://); otherwise STARTTLS when the server offers it. */
  secure: boolean;
  /** TLS server name (the MX host name when `host` is an address). */
  servername?: string;
  rejectUnauthorized: boolean;
  auth?: { user: string; pass: string };
}

/** One message as it may leave: the form each server can take is chosen once its EHLO is known. */
export interface OutgoingMessage {
  /** The message as it is, signed. */
  raw: Buffer;
  /** The body has octets above 127 (RFC 6152): declared BODY=8BITMIME, or sent as `sevenBit()`. */
  eightBit: boolean;
  /** An internationalized address or a UTF-8 header (RFC 6531 §3.4): only to a server with SMTPUTF8. */
  smtpUtf8: boolean;
  /** The 7-bit form, signed again, for a server without 8BITMIME. */
  sevenBit(): Promise<Buffer>;
}

type SendError = Error & {
  code?: string;
  responseCode?: number;
  response?: string;
  rejectedErrors?: SendError[];
  recipient?: string;
};

/** 5xx is final, anything else (4xx, no reply at all) may succeed later (RFC 5321 §4.2.1). */
const statusOf = (code: number | undefined): RecipientStatusAfterAttempt =>
  code !== undefined && code >= 500 ? 'failed' : 'deferred';

/**
 * One SMTP transaction to one server with nodemailer's SMTP client: connect, STARTTLS when
 * offered, AUTH when configured, MAIL/RCPT/DATA. Every recipient gets an outcome; nothing
 * throws. A connection that fails before any reply is `connected: false`, so an MX caller can
 * try the next host. `signal` aborts (the lease was lost): the message is cut before its end.
 */
export async function smtpSend(
  target: SmtpTarget,
  helo: string,
  envelope: { from: string; to: string[] },
  message: OutgoingMessage,
  signal?: AbortSignal,
): Promise<{ connected: boolean; outcomes: Outcome[] }> {
  const conn = new SMTPConnection({
    host: target.host,
    port: target.port,
    secure: target.secure,
    name: helo,
    opportunisticTLS: true,
    ...(target.servername ? { servername: target.servername } : {}),
    tls: {
      rejectUnauthorized: target.rejectUnauthorized,
      minVersion: 'TLSv1.2',
      ...(target.servername ? { servername: target.servername } : {}),
    },
    connectionTimeout: 30_000,
    greetingTimeout: 30_000,
    socketTimeout: 120_000,
    dnsTimeout: 10_000,
  });
  const abort = () => conn.close();
  signal?.addEventListener('abort', abort, { once: true });
  let connected = false;
  const all = (status: RecipientStatusAfterAttempt, reply: string): Outcome[] =>
    envelope.to.map((address) => ({ address, status, reply }));
  try {
    await new Promise<void>((resolve, reject) => {
      conn.once('error', reject);
      conn.connect((err?: Error | null) => (err ? reject(err) : resolve()));
    });
    connected = true;
    if (target.auth)
      await new Promise<void>((resolve, reject) => conn.login(target.auth!, (err) => (err ? reject(err) : resolve())));
    const offers = serverExtensions(conn);
    // RFC 6531 §3.2: without SMTPUTF8 at the next hop the message cannot be relayed (5.6.7).
    if (message.smtpUtf8 && !offers.includes('SMTPUTF8'))
      return {
        connected,
        outcomes: all('failed', '553 5.6.7 The receiving server does not offer SMTPUTF8, which this message needs'),
      };
    const eightBit = message.eightBit && offers.includes('8BITMIME');
    const raw = message.eightBit && !eightBit ? await message.sevenBit() : message.raw;
    const info = await new Promise<{ accepted: string[]; rejectedErrors?: SendError[]; response: string }>(
      (resolve, reject) =>
        conn.send(
          {
            // '' is the null reverse-path `<>` (RFC 5321 §4.5.5), which the approval notices use.
            from: envelope.from === '' ? '' : envelopeAddress(envelope.from),
            to: envelope.to.map(envelopeAddress),
            // nodemailer adds BODY=8BITMIME and SIZE= only where the EHLO offered them.
            use8BitMime: eightBit,
            size: raw.length,
          },
          raw,
          (err, i) => (err ? reject(err) : resolve(i as never)),
        ),
    );
    const rejected = new Map((info.rejectedErrors ?? []).map((e) => [e.recipient ?? '', e]));
    return {
      connected,
      outcomes: envelope.to.map((address) => {
        const r = rejected.get(envelopeAddress(address));
        if (r) return { address, status: statusOf(r.responseCode), reply: replyOf(r) };
        return { address, status: 'delivered', reply: info.response };
      }),
    };
  } catch (e) {
    const err = e as SendError;
    if (signal?.aborted)
      return { connected, outcomes: all('deferred', '451 4.4.0 Delivery attempt interrupted (lease lost)') };
    if (err.rejectedErrors?.length) {
      // Every recipient refused at RCPT: each has its own reply.
      const byAddress = new Map(err.rejectedErrors.map((r) => [r.recipient ?? '', r]));
      return {
        connected: true,
        outcomes: envelope.to.map((address) => {
          const r = byAddress.get(envelopeAddress(address)) ?? err;
          return { address, status: statusOf(r.responseCode), reply: replyOf(r) };
        }),
      };
    }
    if (err.responseCode) return { connected: true, outcomes: all(statusOf(err.responseCode), replyOf(err)) };
    // No reply: refused, reset, timed out or TLS failed. RFC 3463 X.4.x network codes.
    return {
      connected,
      outcomes: all(
        'deferred',
        storableText(`451 4.4.1 ${err.code ?? 'ERROR'}: ${withoutAddresses(err.message)}`.slice(0, 500)),
      ),
    };
  } finally {
    signal?.removeEventListener('abort', abort);
    conn.close();
  }
}

/**
 * The extensions the server's last EHLO offered (after STARTTLS, the second one). nodemailer keeps
 * them in a field it does not declare; it is how its own send decides BODY=, SIZE= and SMTPUTF8.
 */
const serverExtensions = (conn: SMTPConnection): string[] =>
  (conn as unknown as { _supportedExtensions?: string[] })._supportedExtensions ?? [];

// A remote reply is stored in recipient rows and jsonb events: cut, then made storable (a cut can
// split a surrogate pair, and a hostile remote can send NUL), or recording the outcome would fail.
const replyOf = (err: SendError): string =>
  storableText(
    (err.response ?? `${err.responseCode ?? 451} ${err.message}`).replace(/\s+/g, ' ').trim().slice(0, 1000),
  );

/**
 * A socket error names the address and port it failed on (`connect ECONNREFUSED 10.0.0.5:25`);
 * the sender sees this reply, and our network's addresses are none of its business
 * (docs/api.md, "Network targets").
 */
export const withoutAddresses = (message: string): string =>
  message
    .replace(/\[?[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?:%\w+)?\]?(?::\d+)?/gi, (m) =>
      m.includes('::') || (m.match(/:/g) ?? []).length >= 3 ? '[address]' : m,
    )
    .replace(/\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g, '[address]');
