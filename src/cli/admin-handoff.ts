import type { Services } from '../core/services.js';
import { migrate, type Orm } from '../storage/orm.js';
import type { AdminCommandHandler } from '../runtime/admin-socket.js';
import {
  HandoffProtocolError,
  failure,
  type HandoffAnswer,
  type HandoffRequest,
} from '../runtime/admin-socket-protocol.js';
import { executeAdminRequest } from './admin-request.js';
import { migrateSummary } from './migrate-command.js';

/**
 * What the `serve` process holding the embedded database answers on its admin socket: an admin
 * command (admin-commands.ts, `apply` among them) runs through the same binding and table entry as
 * in the CLI, on this process's services; `migrate` runs the migrator, which finds nothing to do
 * because this server migrated the database when it started, and says so.
 */
export function adminCommandHandler(held: { services: Services; orm: Orm }): AdminCommandHandler {
  const { log } = held.services;
  return async (req) => {
    const t0 = performance.now();
    let answer: HandoffAnswer;
    try {
      const output =
        req.command === 'migrate' ? await migrateHere(held.orm, req) : await executeAdminRequest(held.services, req);
      answer = { exitCode: 0, output };
    } catch (err) {
      answer = failure(err);
    }
    // The command's name only: its arguments may hold a password.
    log.info('cli.handoff', {
      command: req.command,
      exitCode: answer.exitCode,
      ...('error' in answer && answer.error.errorCode ? { errorCode: answer.error.errorCode } : {}),
      ms: Math.round(performance.now() - t0),
    });
    return answer;
  };
}

async function migrateHere(orm: Orm, req: HandoffRequest): Promise<string> {
  if (req.args.length || Object.keys(req.options).length)
    throw new HandoffProtocolError('migrate: takes no arguments or options');
  return migrateSummary(await migrate(orm), `the running server (mailbox serve, pid ${process.pid})`);
}
