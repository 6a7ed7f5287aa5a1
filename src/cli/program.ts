import { Command } from 'commander';
import { ConfigError, loadConfig } from '../config/config.js';
import { registerAdminCommands } from './admin-program.js';
import { HandedOffCommandError } from '../runtime/admin-socket-protocol.js';

/** Exit status once the command finished; long-running commands (serve, operator) never set it. */
let exitCode: number | null = null;

const program = new Command('mailbox')
  .description('Multi-tenant e-mail service for integrations and AI agents (HTTP API, MCP, SMTP, Socket.IO).')
  .showHelpAfterError('(run `mailbox --help` for the commands)')
  .configureOutput({ outputError: (text, write) => write(text) });

program
  .command('serve')
  .description('run the service (every role by default; configuration from the environment, see README)')
  .option('--roles <list>', 'comma list of roles: api, smtp, realtime, worker')
  .action(async (opts: { roles?: string }) => {
    // Loaded by the command that needs them, so `mailbox --help` answers at once.
    const { parseRoles, startRuntime } = await import('../runtime/runtime.js');
    const { startTracing, stopTracing } = await import('../telemetry/tracing.js');
    const { startupBanner } = await import('./banner.js');
    const config = loadConfig();
    await startTracing();
    const roles = parseRoles(opts.roles ?? config.MAILBOX_ROLES);
    // On an embedded data directory, the admin commands of another `mailbox` process run here.
    const { adminCommandHandler } = await import('./admin-handoff.js');
    const starting = startRuntime(config, { roles, adminCommands: adminCommandHandler });
    // The handlers exist before the start finishes: /healthz answers as soon as the HTTP listener
    // is up, before the rest of the start (the resource directory's first pass, say), and a SIGTERM
    // in that window must still close gracefully (test/reliability/shutdown.test.ts saw it kill
    // the process under CI load). A signal during the start waits for it (at most 15 s: a start
    // still waiting for an unreachable PostgreSQL has accepted nothing), then closes.
    const stop = async (signal: string) => {
      const started = await Promise.race([
        starting.catch(() => null),
        new Promise<null>((r) => setTimeout(() => r(null), 15_000).unref()),
      ]);
      if (!started) process.exit(1); // the start failed (and reports itself) or never finished
      started.services.log.info('shutdown', { signal });
      await started.close();
      await stopTracing();
      process.exit(0);
    };
    process.once('SIGTERM', () => void stop('SIGTERM'));
    process.once('SIGINT', () => void stop('SIGINT'));
    const runtime = await starting;
    // On a terminal, or where `make run` asks for it; never into a log collector's stream by surprise.
    // Written after the handlers: whoever reads it as "started" may send SIGTERM at once, and before a
    // listener exists that signal would end the process without the graceful close.
    if (process.stderr.isTTY || process.env.MAILBOX_BANNER === 'true')
      process.stderr.write(startupBanner(config, runtime, roles));
  });

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .action(async () => {
    const { runMigrate } = await import('./migrate-command.js');
    console.log(await runMigrate(loadConfig()));
    exitCode = 0;
  });

registerAdminCommands(program, (code) => (exitCode = code));

program
  .command('operator')
  .description('reconcile Domain/Mailbox custom resources in Kubernetes')
  .action(async () => {
    // Loaded only here: the other commands never load the Kubernetes client.
    const { runOperatorCommand } = await import('../../operator/src/operator-command.js');
    await runOperatorCommand(loadConfig());
  });

try {
  // A bare `mailbox` shows the help and succeeds, as before commander.
  if (process.argv.length <= 2) program.help();
  await program.parseAsync(process.argv);
  if (exitCode !== null) process.exit(exitCode);
} catch (err) {
  // One line, no stack: start-up errors are configuration problems an operator must read.
  const message = err instanceof Error ? err.message : String(err);
  console.error(`mailbox: ${err instanceof ConfigError ? message : message.split('\n')[0]}`);
  // A command the running server ran failed there: its status, as if it had failed here.
  process.exit(err instanceof HandedOffCommandError ? err.exitCode : 1);
}
