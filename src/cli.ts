#!/usr/bin/env node
import { parseArgs } from 'node:util';
import path from 'node:path';
import { ConfigError, loadConfig } from './config/config.js';
import { parseRoles, startRuntime } from './main.js';
import { openOrm, migrate } from './storage/orm.js';
import { startTracing, stopTracing } from './telemetry/tracing.js';

const USAGE = `usage: mailbox <command>
  serve [--roles api,smtp,realtime,worker]   run the service (default: every role)
  migrate                                    apply pending database migrations and exit
  apply -f <file|dir>                        apply Domain/Mailbox manifests once and exit
  operator                                   reconcile Domain/Mailbox custom resources in Kubernetes`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const config = loadConfig();
  switch (command) {
    case 'serve': {
      const { values } = parseArgs({ args: rest, options: { roles: { type: 'string' } } });
      startTracing();
      const roles = parseRoles(values.roles ?? config.MAILBOX_ROLES);
      const runtime = await startRuntime(config, { roles });
      const stop = async (signal: string) => {
        runtime.services.log.info('shutdown', { signal });
        await runtime.close();
        await stopTracing();
        process.exit(0);
      };
      process.once('SIGTERM', () => void stop('SIGTERM'));
      process.once('SIGINT', () => void stop('SIGINT'));
      return -1; // keep running
    }
    case 'migrate': {
      const orm = await openOrm({ databaseUrl: config.DATABASE_URL, pgliteDir: config.DATABASE_URL ? undefined : path.join(config.dataDir, 'pglite') });
      const applied = await migrate(orm);
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'no pending migrations');
      await orm.close();
      return 0;
    }
    case 'apply': {
      const { values } = parseArgs({ args: rest, options: { file: { type: 'string', short: 'f' } } });
      if (!values.file) throw new ConfigError('apply needs -f <file|dir>');
      const { applyManifestsOnce } = await import('./apply-command.js');
      const summary = await applyManifestsOnce(config, path.resolve(values.file));
      console.log(summary);
      return 0;
    }
    case 'operator': {
      // Loaded only here: the other commands never load the Kubernetes client.
      const { runOperatorCommand } = await import('../operator/src/operator-command.js');
      await runOperatorCommand(config);
      return -1; // keep running
    }
    default:
      console.error(USAGE);
      return command ? 2 : 0;
  }
}

main(process.argv.slice(2)).then(
  (code) => { if (code >= 0) process.exit(code); },
  (err: unknown) => {
    // One line, no stack: start-up errors are configuration problems an operator must read.
    console.error(`mailbox: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
