import { SMTPServer, type SMTPServerSession } from 'smtp-server';

export interface SinkMessage {
  from: string;
  to: string[];
  raw: Buffer;
  /** MAIL FROM's parameters as the sink received them (`BODY`, `SIZE`, `SMTPUTF8`…). */
  mailArgs: Record<string, string | true>;
}

/** What the sink answers; set per test, changed between attempts. */
export interface SinkScript {
  /** Reply to RCPT TO per address, e.g. `'450 4.2.0 Mailbox busy'`; unlisted addresses get 250. */
  rcpt?: Record<string, string>;
  /** Reply to the end of DATA instead of 250. */
  data?: string;
  /** Drop the connection after this many bytes of DATA. */
  dropAfterBytes?: number;
  /** Hold each DATA's final reply this long (a slow remote server). */
  dataDelayMs?: number;
}

/**
 * A local smtp-server standing in for a relay or a remote MX: records what it accepts, and can
 * answer 4xx/5xx per recipient or to DATA, or drop the connection mid-DATA.
 */
export async function startSink(
  o: { auth?: { user: string; pass: string }; without?: { eightBitMime?: boolean; smtpUtf8?: boolean } } = {},
) {
  const accepted: SinkMessage[] = [];
  const attempts: { to: string[]; outcome: string }[] = [];
  let script: SinkScript = {};
  // Messages between DATA and its final reply, now and at most: how many senders it had at once.
  let inData = 0;
  let peakInData = 0;
  const reply = (text: string) => Object.assign(new Error(text.slice(4)), { responseCode: Number(text.slice(0, 3)) });
  const server = new SMTPServer({
    logger: false,
    disableReverseLookup: true,
    hideENHANCEDSTATUSCODES: true,
    hide8BITMIME: o.without?.eightBitMime === true,
    hideSMTPUTF8: o.without?.smtpUtf8 === true,
    size: 50 * 1024 * 1024,
    disabledCommands: o.auth ? [] : ['AUTH'],
    allowInsecureAuth: true,
    authOptional: !o.auth,
    onAuth(auth, _s, cb) {
      if (auth.username === o.auth?.user && auth.password === o.auth?.pass) return cb(null, { user: auth.username });
      cb(reply('535 5.7.8 Authentication credentials invalid'));
    },
    onRcptTo(address, _s, cb) {
      const scripted = script.rcpt?.[address.address];
      if (scripted && !scripted.startsWith('2')) return cb(reply(scripted));
      cb();
    },
    onData(stream, session: SMTPServerSession, cb) {
      const chunks: Buffer[] = [];
      let bytes = 0;
      const to = session.envelope.rcptTo.map((r) => r.address);
      peakInData = Math.max(peakInData, ++inData);
      let counted = true;
      const leave = () => {
        if (counted) inData--;
        counted = false;
      };
      const answer: typeof cb = (...args) => {
        const finish = () => {
          leave();
          cb(...args);
        };
        if (script.dataDelayMs) setTimeout(finish, script.dataDelayMs);
        else finish();
      };
      stream.on('data', (c: Buffer) => {
        chunks.push(c);
        bytes += c.length;
        if (script.dropAfterBytes !== undefined && bytes >= script.dropAfterBytes) {
          attempts.push({ to, outcome: 'dropped' });
          leave();
          for (const conn of (server as any).connections as Set<any>)
            if (conn.session === session) conn._socket.destroy();
        }
      });
      stream.on('end', () => {
        if (script.data && !script.data.startsWith('2')) {
          attempts.push({ to, outcome: script.data });
          return answer(reply(script.data));
        }
        accepted.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to,
          raw: Buffer.concat(chunks),
          mailArgs: ((session.envelope.mailFrom && session.envelope.mailFrom.args) || {}) as Record<
            string,
            string | true
          >,
        });
        attempts.push({ to, outcome: 'accepted' });
        answer(null, 'Ok: queued as SINK');
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    accepted,
    attempts,
    script(next: SinkScript) {
      script = next;
    },
    /** The most messages that were in DATA at once since the last reset. */
    peakInData: () => peakInData,
    resetPeak() {
      peakInData = inData;
    },
    /** How many accepted copies reached each recipient. */
    copiesFor(address: string): number {
      return accepted.filter((m) => m.to.includes(address)).length;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
