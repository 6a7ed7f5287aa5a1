import path from 'node:path';
import { Option } from 'commander';
import type { Services } from '../core/services.js';
import { ADMIN_COMMANDS, type AdminCommand, type AdminOption } from './admin-commands.js';
import { HandoffProtocolError, request, type HandoffRequest } from '../runtime/admin-socket-protocol.js';

/**
 * An admin command travels as a request (src/runtime/admin-socket-protocol.ts) whether it runs in this process or in
 * the `serve` process holding the embedded database: both bind it here, with the same checks, and
 * run the same table entry.
 */
export const optionKey = (option: AdminOption): string => new Option(option.flags).attributeName();

/** The request for a command line as commander parsed it; file names made absolute here, where they were typed. */
export function commandRequest(
  command: AdminCommand,
  args: readonly string[],
  parsed: Readonly<Record<string, unknown>>,
): HandoffRequest {
  const options: Record<string, string> = {};
  for (const option of command.options) {
    const key = optionKey(option);
    const value = parsed[key];
    if (typeof value === 'string') options[key] = option.path ? path.resolve(value) : value;
  }
  return request(command.name, args, options);
}

/** The request's command with its arguments checked as commander checks a command line, defaults filled in. */
export function bindRequest(req: HandoffRequest): {
  command: AdminCommand;
  args: readonly string[];
  opts: Record<string, string | undefined>;
} {
  const command = ADMIN_COMMANDS.find((c) => c.name === req.command);
  if (!command) throw new HandoffProtocolError(`unknown command '${req.command}'`);
  if (req.args.length !== command.args.length)
    throw new HandoffProtocolError(
      `${command.name}: ${command.args.length} argument(s) expected (${command.args.map((a) => `<${a}>`).join(' ')}), got ${req.args.length}`,
    );
  const options = new Map(command.options.map((o) => [optionKey(o), o]));
  const unknown = Object.keys(req.options).find((key) => !options.has(key));
  if (unknown !== undefined) throw new HandoffProtocolError(`${command.name}: unknown option '${unknown}'`);
  const opts: Record<string, string | undefined> = {};
  for (const [key, option] of options) {
    const value = req.options[key] ?? option.default;
    if (value === undefined && option.required)
      throw new HandoffProtocolError(`${command.name}: required option '${option.flags}' not specified`);
    if (value !== undefined && option.path && !path.isAbsolute(value))
      throw new HandoffProtocolError(`${command.name}: option '${option.flags}' must be an absolute path`);
    opts[key] = value;
  }
  return { command, args: req.args, opts };
}

/** Runs a bound request as the operator (OperatorSession), whose short-lived tokens are disabled after. */
export async function executeAdminRequest(services: Services, req: HandoffRequest): Promise<unknown> {
  const { command, args, opts } = bindRequest(req);
  const { OperatorSession } = await import('../core/flows/admin/operator-session.js');
  const session = new OperatorSession(services);
  try {
    return await command.run({ services, session }, args, opts);
  } finally {
    await session.close().catch(() => undefined);
  }
}
