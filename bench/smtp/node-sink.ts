import { SMTPServer } from 'smtp-server';

// The Node ceiling beside Postfix's smtp-sink: smtp-server (the library our SMTP channel is built
// on) with the same STARTTLS certificate, AUTH that accepts anyone, and a DATA handler that reads
// the message and discards it. Whatever our 587/25 do per message is on top of this row.
// Run by bench/smtp/run.ts as a child process: SINK_PORT, SINK_KEY and SINK_CERT (PEM) from the env.
const port = Number(process.env.SINK_PORT);
const server = new SMTPServer({
  name: 'node-sink.bench.test',
  key: process.env.SINK_KEY,
  cert: process.env.SINK_CERT,
  authMethods: ['PLAIN', 'LOGIN'],
  authOptional: true,
  disableReverseLookup: true,
  logger: false,
  size: 50 * 1024 * 1024,
  onAuth(auth, _session, callback) {
    callback(null, { user: auth.username });
  },
  onData(stream, _session, callback) {
    stream.on('data', () => undefined);
    stream.on('end', () => callback());
  },
});
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
