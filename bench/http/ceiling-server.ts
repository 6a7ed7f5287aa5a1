import http from 'node:http';
import { readFileSync } from 'node:fs';

// The ceiling: a bare node:http server answering pre-serialised bodies from memory,
// so the gap to it is exactly what routing, auth, storage and serialisation cost.
const bodies = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Record<string, string>;
const port = Number(process.argv[3] ?? 0);
http
  .createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const body = bodies[path] ?? bodies['/'] ?? '{}';
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  })
  .listen(port, '127.0.0.1');

process.on('SIGTERM', () => process.exit(0));
