import path from 'node:path';
import type { Config } from '../config/config.js';
import type { Role, Runtime } from '../runtime/runtime.js';

/**
 * What a person who just typed `make run` needs next: where the console, the API reference, MCP
 * and the SMTP ports are, and where the quick-start credentials live. Written to stderr so the
 * JSON log lines on stdout stay machine-readable.
 */
export function startupBanner(config: Readonly<Config>, runtime: Runtime, roles: readonly Role[]): string {
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  const base = (
    config.PUBLIC_BASE_URL ?? `http://${host.includes(':') ? `[${host}]` : host}:${runtime.httpPort}`
  ).replace(/\/$/, '');
  const lines = ['', 'mailbox-service is running', ''];
  if (runtime.httpPort !== null && roles.includes('api')) {
    lines.push(`  Web console     ${base}/`);
    lines.push(`  API reference   ${base}/api/docs   (OpenAPI: ${base}/api/openapi.json)`);
    lines.push(`  MCP             ${base}/mcp   (Streamable HTTP, Authorization: Bearer <token>)`);
  }
  if (runtime.httpPort !== null && roles.includes('realtime'))
    lines.push(`  Socket.IO       ${base}   path /hubs/mailbox-events`);
  if (runtime.smtpPorts.submission !== null)
    lines.push(
      `  SMTP submission ${host}:${runtime.smtpPorts.submission}   (STARTTLS; user = address, password = a token)`,
    );
  if (runtime.smtpPorts.mx !== null) lines.push(`  SMTP inbound    ${host}:${runtime.smtpPorts.mx}`);
  lines.push(`  Storage         ${config.DATABASE_URL ? 'PostgreSQL (DATABASE_URL)' : `PGlite in ${config.dataDir}`}`);
  if (config.MAILBOX_RESOURCES_DIR) {
    lines.push('');
    lines.push(`  Declared resources from ${path.resolve(config.MAILBOX_RESOURCES_DIR)};`);
    lines.push(`  their tokens are in ${path.join(config.dataDir, 'secrets', '<namespace>')}/*.json.`);
    if (path.basename(path.resolve(config.MAILBOX_RESOURCES_DIR)) === 'resources')
      lines.push('  Quick start: sign in to the console as agent@example.test / agent-password-123.');
  }
  if (!config.SMTP_RELAY_URL && config.SMTP_DELIVERY !== 'mx')
    lines.push('', '  Mail to outside addresses stays queued: set SMTP_RELAY_URL or SMTP_DELIVERY=mx.');
  lines.push('  `mailbox --help` lists the admin commands.', '');
  return lines.join('\n') + '\n';
}
