import http from 'node:http';
import { constants, monitorEventLoopDelay, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { Server } from 'socket.io';
import type { Stalls } from './stalls.js';

// The ceiling: a bare Socket.IO server on the same path, no auth, no database, no bus. Clients
// join their mailbox's room on connect; POST /emit { mailboxAddress, event } emits the same
// payload the service would, so the gap to it is what the service's pipeline costs. GET /stats:
// the event loop's longest delay since the last read and the GC's pauses, measured as the
// service's prom-client metrics measure them (stalls.ts).
const port = Number(process.argv[2]);
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
const gc = { gcMs: 0, gcLongKinds: {} as Record<string, number> };
// prom-client's names for the kinds (its gc metric labels them so).
const KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.gcMs += entry.duration;
    if (entry.duration < 10) continue;
    const kind = KINDS[(entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'unknown';
    gc.gcLongKinds[kind] = (gc.gcLongKinds[kind] ?? 0) + 1;
  }
}).observe({ entryTypes: ['gc'] });
const server = http.createServer((req, res) => {
  if (req.url === '/stats') {
    const stalls: Stalls = { loopMaxMs: loop.max / 1e6, ...gc };
    loop.reset();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stalls));
    return;
  }
  if (req.method !== 'POST' || req.url !== '/emit') {
    res.writeHead(req.url === '/healthz' ? 200 : 404).end();
    return;
  }
  let body = '';
  req.on('data', (d: Buffer) => {
    body += d;
  });
  req.on('end', () => {
    const { mailboxAddress, event } = JSON.parse(body) as { mailboxAddress: string; event: { type: string } };
    io.to(`mailbox:${mailboxAddress}`).emit(event.type, event);
    res.writeHead(204).end();
  });
});
const io = new Server(server, { path: '/hubs/mailbox-events', serveClient: false });
io.on('connection', (socket) => {
  void socket.join(`mailbox:${String(socket.handshake.auth.mailboxAddress)}`);
  socket.emit('subscription.ready', {});
});
server.listen(port, '127.0.0.1');
