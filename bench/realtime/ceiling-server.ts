import http from 'node:http';
import { Server } from 'socket.io';

// The ceiling: a bare Socket.IO server on the same path, no auth, no database, no bus. Clients
// join their mailbox's room on connect; POST /emit { mailboxAddress, event } emits the same
// payload the service would, so the gap to it is what the service's pipeline costs.
const port = Number(process.argv[2]);
const server = http.createServer((req, res) => {
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
