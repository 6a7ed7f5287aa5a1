import type http from 'node:http';
import type { Services } from '../../core/services.js';

/** Attaches the Socket.IO hub at /hubs/mailbox-events to an HTTP server. (Being built.) */
export async function startRealtime(_services: Services, _server: http.Server): Promise<{ close(): Promise<void> }> {
  return { close: async () => undefined };
}
