import { Option, type Command } from 'commander';
import { loadConfig } from '../config/config.js';
import type { HandoffRequest } from '../runtime/admin-socket-protocol.js';
import { ADMIN_COMMANDS, ADMIN_GROUPS, printed, type AdminCommand } from './admin-commands.js';
import { commandRequest, executeAdminRequest } from './admin-request.js';

/**
 * Registers the admin commands (admin-commands.ts) with commander. Each opens the configured storage
 * with no listener and runs here; when a `serve` process holds the embedded data directory, the
 * command is handed to it over its admin socket instead (src/runtime/admin-socket.ts). Either way stdout gets the same
 * text and the exit status is the same.
 */
export function registerAdminCommands(program: Command, done: (code: number) => void): void {
  const groups = new Map<string, Command>();
  const group = (name: string) => {
    let found = groups.get(name);
    if (!found) groups.set(name, (found = program.command(name).description(ADMIN_GROUPS[name] ?? name)));
    return found;
  };
  for (const command of ADMIN_COMMANDS) {
    const words = command.name.split(' ');
    const parent = words.length > 1 ? group(words[0]!) : program;
    const sub = parent
      .command([words.at(-1)!, ...command.args.map((a) => `<${a}>`)].join(' '))
      .description(command.description);
    for (const o of command.options) {
      const option = new Option(o.flags, o.description);
      if (o.default !== undefined) option.default(o.default);
      if (o.required) option.makeOptionMandatory();
      sub.addOption(option);
    }
    sub.action(async (...params: unknown[]) => {
      const parsed = params.at(-1) as Command;
      const req = commandRequest(command, parsed.processedArgs as string[], parsed.opts());
      process.stdout.write(printed(command, await run(command, req)) + '\n');
      done(0);
    });
  }
}

async function run(command: AdminCommand, req: HandoffRequest): Promise<unknown> {
  const config = loadConfig();
  const { startRuntime } = await import('../runtime/runtime.js');
  const { createPinoLogger } = await import('../logging/pino-logger.js');
  let runtime;
  try {
    // No listener, no resource directory: the command touches only what it names.
    runtime = await startRuntime(
      { ...config, MAILBOX_RESOURCES_DIR: undefined },
      { roles: [], log: createPinoLogger('warn', { fd: 2 }), command: command.holdAs },
    );
  } catch (err) {
    const { handOffOrThrow } = await import('../runtime/admin-socket-client.js');
    return handOffOrThrow(config.dataDir, req, err);
  }
  try {
    return await executeAdminRequest(runtime.services, req);
  } finally {
    await runtime.close();
  }
}
