import type http from 'node:http';

/**
 * The HTTP half of a SIGTERM drain. `server.close()` alone stops listening but keeps keep-alive
 * connections (and answers new requests on them) until keepAliveTimeout, and
 * `closeAllConnections()` cuts requests in flight, so a client that was already sending loses
 * its answer (a 202 it never sees). Instead: stop listening, close idle connections, let the
 * requests in flight finish with `Connection: close`, and cut what is left after `drainMs`.
 */
export function gracefulClose(server: http.Server): (drainMs: number) => Promise<void> {
  const inFlight = new Set<http.ServerResponse>();
  let closing = false;
  const lastOnItsConnection = (res: http.ServerResponse) => {
    if (!res.headersSent) res.setHeader('Connection', 'close');
    else res.shouldKeepAlive = false;
  };
  server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (closing) lastOnItsConnection(res);
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  return (drainMs) =>
    new Promise<void>((resolve) => {
      closing = true;
      for (const res of inFlight) lastOnItsConnection(res);
      const cut = setTimeout(() => server.closeAllConnections(), drainMs);
      cut.unref();
      server.close(() => {
        clearTimeout(cut);
        resolve();
      });
      server.closeIdleConnections();
    });
}
