import type { Command } from 'commander';
import type { z } from 'zod';
import { loadConfig } from '../config/config.js';
import { AppError } from '../core/base/errors.js';
import type { OperatorSession } from '../core/flows/admin/operator-session.js';
import type { Principal } from '../core/access/principal.js';
import type { Services } from '../core/services.js';
import { createMailboxInputSchema, setPasswordInputSchema } from '../core/state/mailboxes/mailbox.schemas.js';
import { createTokenInputSchema } from '../core/access/token.schemas.js';
import { DEFAULT_INTEGRATION_SCOPES } from '../core/access/scopes.js';
import { splitAddress } from '../core/base/address.js';

/**
 * Admin commands on the configured database (embedded PGlite under MAILBOX_DATA_DIR, or
 * DATABASE_URL): no server needs to run, no curl. Each opens the storage with no listener, acts
 * through the core services as the operator (OperatorSession) and prints JSON on stdout. Input is
 * checked by the very schemas the HTTP API uses.
 */
export function adminCommands(program: Command, done: (code: number) => void): void {
  const domain = program.command('domain').description('domains (operator)');
  domain
    .command('create <name>')
    .description('create a domain (or find it) and print a new domain token for it')
    .option('--token-name <name>', 'name of the domain token', 'cli-domain-token')
    .action((name: string, o: { tokenName: string }) =>
      run(done, async (_services, session) => {
        const { domainId, token } = await session.createDomain(name, o.tokenName);
        return { domainId, domainName: name.toLowerCase(), ...token };
      }),
    );

  const mailbox = program.command('mailbox').description('mailboxes (operator)');
  mailbox
    .command('create <address>')
    .description("create a mailbox in an existing domain; prints its bootstrap token (the password's login also works)")
    .option('--display-name <name>', 'display name in From headers')
    .option('--password <password>', 'also set a login password (8 characters or more)')
    .action((address: string, o: { displayName?: string; password?: string }) =>
      run(done, async (services, session) => {
        const principal = await session.asDomain(splitAddress(address).domain);
        const input = parse(createMailboxInputSchema, { address, displayName: o.displayName }, 'mailbox');
        const password = o.password === undefined ? undefined : parse(passwordSchema, { password: o.password }, '');
        const created = await services.mailboxes.create(principal, input);
        if (password) await services.mailboxes.setPassword(principal, created.mailbox.mailboxId, password.password);
        return { ...created, passwordSet: o.password !== undefined };
      }),
    );
  mailbox
    .command('list <domain>')
    .description("list a domain's mailboxes")
    .action((domainName: string) =>
      run(done, async (services, session) => {
        const principal = await session.asDomain(domainName);
        const items: unknown[] = [];
        let cursor: string | undefined;
        do {
          const page = await services.mailboxes.list(principal, { limit: 200, cursor });
          items.push(...page.items);
          cursor = page.nextCursor ?? undefined;
        } while (cursor);
        return items;
      }),
    );
  mailbox
    .command('set-password <address>')
    .description("set a mailbox's login password (POST /api/mailbox/auth/login/password then works)")
    .requiredOption('--password <password>', 'the new password (8 characters or more)')
    .action((address: string, o: { password: string }) =>
      run(done, async (services, session) => {
        const principal = await session.asDomain(splitAddress(address).domain);
        const { resolveMailbox } = await import('../core/access/access.js');
        const target = await resolveMailbox(services.db, principal, address);
        return services.mailboxes.setPassword(
          principal,
          target.id,
          parse(passwordSchema, { password: o.password }, '').password,
        );
      }),
    );

  const token = program.command('token').description("a mailbox's access tokens (operator)");
  token
    .command('create <address>')
    .description('mint a mailbox token; the plaintext is printed once (and revealable for TOKEN_REVEAL_WINDOW)')
    .option('--name <name>', 'token name', 'cli-token')
    .option('--scopes <list>', 'comma list of scopes', DEFAULT_INTEGRATION_SCOPES.join(','))
    .option('--expires-in <days>', 'lifetime in days (default TOKEN_DEFAULT_TTL)')
    .action((address: string, o: { name: string; scopes: string; expiresIn?: string }) =>
      run(done, async (services, session) => {
        const { principal, mailboxId } = await mailboxOf(services, session, address);
        const days = o.expiresIn === undefined ? undefined : Number(o.expiresIn);
        if (days !== undefined && !(days > 0)) throw new AppError('EXPIRY_INVALID', '--expires-in: a number of days');
        const input = parse(
          createTokenInputSchema,
          {
            tokenName: o.name,
            scopes: o.scopes.split(',').map((s) => s.trim()),
            ...(days ? { expiresAtTs: services.clock.now().getTime() + days * 86_400_000 } : {}),
          },
          'token',
        );
        return services.tokens.create(services.tokens.domain(principal, mailboxId), input);
      }),
    );
  token
    .command('list <address>')
    .description("list a mailbox's tokens (never their plaintext)")
    .action((address: string) =>
      run(done, async (services, session) => {
        const { principal, mailboxId } = await mailboxOf(services, session, address);
        return services.tokens.list(services.tokens.domain(principal, mailboxId));
      }),
    );
}

const passwordSchema = setPasswordInputSchema;

async function mailboxOf(
  services: Services,
  session: OperatorSession,
  address: string,
): Promise<{ principal: Principal; mailboxId: string }> {
  const principal = await session.asDomain(splitAddress(address.toLowerCase()).domain);
  const { resolveMailbox } = await import('../core/access/access.js');
  return { principal, mailboxId: (await resolveMailbox(services.db, principal, address)).id };
}

/** The HTTP API's validation, with the option name instead of a JSON path in the message. */
function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new AppError(
    'VALIDATION_FAILED',
    `${what ? `${what} ` : ''}${issue.path.join('.') || 'value'}: ${issue.message}`,
  );
}

async function run(
  done: (code: number) => void,
  body: (services: Services, session: OperatorSession) => Promise<unknown>,
): Promise<void> {
  const config = loadConfig();
  const { startRuntime } = await import('../runtime/runtime.js');
  const { createPinoLogger } = await import('../logging/pino-logger.js');
  const { OperatorSession } = await import('../core/flows/admin/operator-session.js');
  // No listener, no resource directory: the command touches only what it names.
  const runtime = await startRuntime(
    { ...config, MAILBOX_RESOURCES_DIR: undefined },
    { roles: [], log: createPinoLogger('warn', { fd: 2 }), command: 'admin' },
  );
  const session = new OperatorSession(runtime.services);
  try {
    const result = await body(runtime.services, session);
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    done(0);
  } finally {
    await session.close().catch(() => undefined);
    await runtime.close();
  }
}
