import http from 'node:http';
import { listen } from '../../src/channels/shared/listen.js';
import { registry } from '../../src/telemetry/metric-registry.js';

/**
 * The operator's own small HTTP server on OPERATOR_PORT: GET /healthz (liveness; answers while
 * the process runs, leader or standby, with what it is doing) and GET /metrics (Prometheus).
 * Liveness does not depend on the API server: restarting the pod would not bring it back.
 */
export async function startOperatorServer(
  port: number,
  host: string,
  health: () => Record<string, unknown>,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET')
      return send(res, 405, 'application/json', JSON.stringify({ error: 'method not allowed' }));
    if (path === '/healthz' || path === '/readyz')
      return send(res, 200, 'application/json', JSON.stringify({ status: 'ok', ...health() }));
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => send(res, 200, registry.contentType, text),
        () => send(res, 500, 'text/plain', 'metrics unavailable\n'),
      );
      return;
    }
    send(res, 404, 'application/json', JSON.stringify({ error: 'not found' }));
  });
  const bound = await listen(server, port, host, 'OPERATOR_PORT');
  return {
    port: bound,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}
