// The relay the workers deliver external mail to (SMTP_RELAY_URL): a small SMTP server run with the
// project's own image (node and smtp-server are in it), so the e2e needs no third-party image. It
// records every message it is given, by Message-ID, before answering, exactly as a real MTA
// commits before its 250; a message whose subject contains "[hold]" gets its answer delayed the
// first time, so a worker can be killed while it waits (SMTP_RELAY_URL's delivery in flight).
// GET /messages lists what arrived; GET /holding names the client address of the held session.
// It is also a webhook receiver: a POST to /hooks/<anything> is kept as it came (path, headers, the
// body as text, the time) and answered 204; GET /hooks?since=N lists them from the N-th on, so the
// runner checks the Standard Webhooks signatures itself (checks/mcp-events.ts).

export const SINK_SMTP_PORT = 2525;
export const SINK_HTTP_PORT = 8025;

export const SINK_SCRIPT = String.raw`
import http from 'node:http';
import { createRequire } from 'node:module';
const { SMTPServer } = createRequire('/app/package.json')('smtp-server');
const received = [];
let holding = null;
const header = (raw, name) => (new RegExp('^' + name + ':\\s*(.*)$', 'mi').exec(raw) || [])[1]?.trim() ?? '';
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  logger: false,
  onData(stream, session, callback) {
    const chunks = [];
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', () => {
      const raw = Buffer.concat(chunks).toString('latin1');
      const messageId = header(raw, 'Message-ID');
      const subject = header(raw, 'Subject');
      const first = !received.some((m) => m.messageId === messageId);
      received.push({ messageId, subject, client: session.remoteAddress, at: Date.now() });
      if (subject.includes('[hold]') && first) {
        holding = { messageId, client: session.remoteAddress.replace(/^::ffff:/, ''), since: Date.now() };
        const release = () => { holding = null; callback(); };
        const timer = setTimeout(release, 60000);
        session.holdTimer = timer;
        return;
      }
      callback();
    });
  },
  onClose(session) { if (session.holdTimer) { clearTimeout(session.holdTimer); holding = null; } },
});
server.on('error', (err) => console.error('smtp error', err.message));
server.listen(${SINK_SMTP_PORT}, '0.0.0.0');
const hooks = [];
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://sink');
  if (req.method === 'POST' && url.pathname.startsWith('/hooks/')) {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      hooks.push({ path: url.pathname, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      res.statusCode = 204;
      res.end();
    });
    return;
  }
  const since = Number(url.searchParams.get('since') || 0);
  const body = url.pathname === '/holding' ? holding : url.pathname === '/healthz' ? { ok: true }
    : url.pathname === '/hooks' ? hooks.slice(since) : received;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}).listen(${SINK_HTTP_PORT}, '0.0.0.0');
console.log('sink listening');
`;
