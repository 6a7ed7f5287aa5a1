import type http from 'node:http';
import { Server } from 'socket.io';
import { createAdapter } from '@socket.io/redis-adapter';
import type { Services } from '../../core/services.js';
import { authorizeHandshake, socketError } from './handshake.js';
import { RealtimeHub } from './hub.js';
import { OriginPolicy } from '../shared/origin-policy.js';
import { clientAddressResolver } from '../shared/client-address.js';

/** Where the hub lives: Socket.IO's `path`, so clients call `io(baseUrl, { path: REALTIME_PATH, auth })`. */
export const REALTIME_PATH = '/hubs/mailbox-events';

/**
 * Attaches the Socket.IO hub at /hubs/mailbox-events to the HTTP server (docs/contract.md, Real-time).
 * This file only wires: the handshake (handshake.ts) turns credentials into a subscriber through
 * the core, the hub (hub.ts) replays and emits.
 */
export async function startRealtime(services: Services, server: http.Server): Promise<{ close(): Promise<void> }> {
  const { config, log } = services;
  const origins = new OriginPolicy(config.REALTIME_ALLOWED_ORIGINS, config.PUBLIC_BASE_URL);
  const cors = origins.cors;
  let closing = false;
  const io = new Server(server, {
    path: REALTIME_PATH,
    serveClient: false,
    // While shutting down, refuse new transports: a client reconnecting at once would otherwise
    // open a websocket that holds the HTTP server's close() open.
    allowRequest: (_req, callback) => callback(closing ? 'shutting down' : null, !closing),
    // Clients only send the CONNECT packet (auth); nothing larger is ever legitimate.
    maxHttpBufferSize: 64 * 1024,
    ...(cors ? { cors } : {}),
  });

  // docs/contract.md: REDIS_URL switches the Socket.IO adapter to Redis, so room operations
  // (fetchSockets, disconnectSockets, server-side emits) span every realtime replica.
  const adapterSub = services.redis?.duplicate({ maxRetriesPerRequest: null }) ?? null;
  if (services.redis && adapterSub) {
    adapterSub.on('error', (err) => log.warn('realtime.adapter_redis_error', { message: err.message }));
    io.adapter(
      createAdapter(services.redis, adapterSub, {
        key: 'mailbox-service:socket.io',
        publishOnSpecificResponseChannel: true,
      }),
    );
  }

  const hub = new RealtimeHub(io, services);
  const clientAddressOf = clientAddressResolver(config.TRUST_PROXY);
  io.use((socket, next) => {
    authorizeHandshake(services, origins, clientAddressOf, socket.handshake).then(
      (sub) => {
        socket.data.sub = sub;
        socket.once('disconnect', sub.release);
        next();
      },
      (err: unknown) => next(socketError(err, log, 'handshake')),
    );
  });
  io.on('connection', (socket) => {
    hub.attach(socket, socket.data.sub).catch((err) => {
      log.error('realtime.attach_failed', { err });
      socket.disconnect(true);
    });
  });
  hub.start();

  return {
    async close() {
      closing = true;
      hub.stop();
      // No disconnectSockets: through the Redis adapter it reached every replica's sockets, and its
      // "io server disconnect" tells socket.io-client not to reconnect. Closing the engine ends only
      // this process's transports; clients see "transport close" and reconnect to another replica.
      // io.close() would also close the HTTP server the API shares; the composition root owns it.
      io.engine.close();
      adapterSub?.disconnect();
    },
  };
}
