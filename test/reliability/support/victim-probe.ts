import http from 'node:http';

// The other tenant, as its own process: GET <url> with <token> every 50 ms on one keep-alive
// connection until stdin closes, then one JSON line of latencies (ms) and statuses on stdout.
// A separate process, because the flooding test process's own event loop (building and pushing
// hundreds of MiB of uploads) must not be timed as the service's latency.
const [url, token] = process.argv.slice(2) as [string, string];
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const ms: number[] = [];
const statuses: Record<string, number> = {};
let running = true;
process.stdin.on('end', () => (running = false)).resume();

function get(): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent, headers: { authorization: `Bearer ${token}` }, timeout: 30_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(String(res.statusCode)));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve(err.message));
  });
}

while (running) {
  const t0 = performance.now();
  const status = await get();
  ms.push(performance.now() - t0);
  statuses[status] = (statuses[status] ?? 0) + 1;
  await new Promise((r) => setTimeout(r, 50));
}
agent.destroy();
process.stdout.write(JSON.stringify({ ms, statuses }) + '\n');
