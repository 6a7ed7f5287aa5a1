import type { Services } from '../../core/services.js';
import { smtpHostname } from '../../core/flows/delivery/mail-transport.js';
import { listen } from '../shared/listen.js';
import { loadTlsMaterial } from './tls-material.js';
import { ClientLimits } from './client-limits.js';
import { createSubmissionServer } from './submission-server.js';
import { createMxServer } from './mx-server.js';
import type { MailboxSmtpServer } from './smtp-connection.js';

export interface SmtpListeners {
  ports: { submission: number | null; mx: number | null };
  close(): Promise<void>;
}

/**
 * Starts the SMTP listeners: submission on SMTP_SUBMISSION_PORT (587) and inbound MX on
 * SMTP_MX_PORT (25), sharing one TLS certificate. A listener that cannot bind stops start-up with
 * the variable to change; close() stops accepting and lets sessions in flight finish briefly.
 */
export async function startSmtpServers(services: Services): Promise<SmtpListeners> {
  const { config, log } = services;
  const hostname = smtpHostname(config);
  const tls = await loadTlsMaterial(config, hostname);
  const servers: MailboxSmtpServer[] = [];
  const start = async (server: MailboxSmtpServer, port: number, envName: string): Promise<number> => {
    server.on('error', (err: Error) => log.warn('smtp.connection_error', { message: err.message }));
    servers.push(server);
    return listen(server.server, port, config.HOST, envName);
  };
  try {
    const submission = await start(
      createSubmissionServer(services, hostname, tls, new ClientLimits(config.SMTP_MAX_CONNECTIONS_PER_CLIENT)),
      config.SMTP_SUBMISSION_PORT,
      'SMTP_SUBMISSION_PORT',
    );
    const mx = await start(
      createMxServer(services, hostname, tls, new ClientLimits(config.SMTP_MAX_CONNECTIONS_PER_CLIENT)),
      config.SMTP_MX_PORT,
      'SMTP_MX_PORT',
    );
    log.info('smtp.listening', { submission, mx, tls: tls.source, hostname });
    return { ports: { submission, mx }, close: () => closeAll(servers) };
  } catch (err) {
    await closeAll(servers);
    throw err;
  }
}

function closeAll(servers: MailboxSmtpServer[]): Promise<void> {
  return Promise.all(
    servers.map(
      (s) =>
        new Promise<void>((resolve) => {
          if (!s.server.listening) return resolve();
          s.close(() => resolve());
        }),
    ),
  ).then(() => undefined);
}
