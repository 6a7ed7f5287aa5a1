import type { z } from 'zod';
import { AppError } from '../core/base/errors.js';
import type { OperatorSession } from '../core/flows/admin/operator-session.js';
import type { Principal } from '../core/access/principal.js';
import type { Services } from '../core/services.js';
import { createMailboxInputSchema, setPasswordInputSchema } from '../core/state/mailboxes/mailbox.schemas.js';
import { createTokenInputSchema } from '../core/access/token.schemas.js';
import { DEFAULT_INTEGRATION_SCOPES } from '../core/access/scopes.js';
import { splitAddress } from '../core/base/address.js';

/**
 * The commands that act on the storage as the operator, each once: its name, arguments, options and
 * action. `admin-program.ts` registers them with commander and runs them in this process, or hands
 * them to the `serve` process holding the embedded database; that server runs the very same entry
 * (`admin-handoff.ts`). Input is checked by the schemas the HTTP API uses.
 */
export interface AdminCommand {
  /** The words after `mailbox`: a group and a verb (`mailbox create`) or one word (`apply`). */
  name: string;
  description: string;
  /** Required positional arguments, in order. */
  args: readonly string[];
  options: readonly AdminOption[];
  /** How the result is printed: JSON with a two-space indent, or as it is (apply's summary). */
  output: 'json' | 'text';
  /** The name it holds the embedded database under when it runs here (the lock file shows it). */
  holdAs: 'admin' | 'apply';
  run(ctx: AdminContext, args: readonly string[], opts: AdminOptions): Promise<unknown>;
}

export interface AdminOption {
  /** commander's flags; the option's key is their attribute name (`--token-name` is `tokenName`). */
  flags: string;
  description: string;
  default?: string;
  required?: boolean;
  /** A file name: made absolute against the caller's working directory wherever the command runs. */
  path?: boolean;
}

export type AdminOptions = Readonly<Record<string, string | undefined>>;

export interface AdminContext {
  services: Services;
  session: OperatorSession;
}

export const ADMIN_GROUPS: Readonly<Record<string, string>> = {
  domain: 'domains (operator)',
  mailbox: 'mailboxes (operator)',
  token: "a mailbox's access tokens (operator)",
};

export const ADMIN_COMMANDS: readonly AdminCommand[] = [
  {
    name: 'apply',
    description: 'apply Domain/Mailbox manifests once and exit',
    args: [],
    options: [
      {
        flags: '-f, --file <file|dir>',
        description: 'a YAML manifest file or a directory of them',
        required: true,
        path: true,
      },
    ],
    output: 'text',
    holdAs: 'apply',
    async run({ services }, _args, o) {
      const { applyManifests } = await import('../apply-command.js');
      return applyManifests(services, o.file!);
    },
  },
  {
    name: 'domain create',
    description: 'create a domain (or find it) and print a new domain token for it',
    args: ['name'],
    options: [{ flags: '--token-name <name>', description: 'name of the domain token', default: 'cli-domain-token' }],
    output: 'json',
    holdAs: 'admin',
    async run({ session }, [name], o) {
      const { domainId, token } = await session.createDomain(name!, o.tokenName!);
      return { domainId, domainName: name!.toLowerCase(), ...token };
    },
  },
  {
    name: 'mailbox create',
    description: "create a mailbox in an existing domain; prints its bootstrap token (the password's login also works)",
    args: ['address'],
    options: [
      { flags: '--display-name <name>', description: 'display name in From headers' },
      { flags: '--password <password>', description: 'also set a login password (8 characters or more)' },
    ],
    output: 'json',
    holdAs: 'admin',
    async run({ services, session }, [address], o) {
      const principal = await session.asDomain(splitAddress(address!).domain);
      const input = parse(createMailboxInputSchema, { address, displayName: o.displayName }, 'mailbox');
      const password =
        o.password === undefined ? undefined : parse(setPasswordInputSchema, { password: o.password }, '');
      const created = await services.mailboxes.create(principal, input);
      if (password) await services.mailboxes.setPassword(principal, created.mailbox.mailboxId, password.password);
      return { ...created, passwordSet: o.password !== undefined };
    },
  },
  {
    name: 'mailbox list',
    description: "list a domain's mailboxes",
    args: ['domain'],
    options: [],
    output: 'json',
    holdAs: 'admin',
    async run({ services, session }, [domainName]) {
      const principal = await session.asDomain(domainName!);
      const items: unknown[] = [];
      let cursor: string | undefined;
      do {
        const page = await services.mailboxes.list(principal, { limit: 200, cursor });
        items.push(...page.items);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      return items;
    },
  },
  {
    name: 'mailbox set-password',
    description: "set a mailbox's login password (POST /api/mailbox/auth/login/password then works)",
    args: ['address'],
    options: [
      { flags: '--password <password>', description: 'the new password (8 characters or more)', required: true },
    ],
    output: 'json',
    holdAs: 'admin',
    async run({ services, session }, [address], o) {
      const principal = await session.asDomain(splitAddress(address!).domain);
      const { resolveMailbox } = await import('../core/access/access.js');
      const target = await resolveMailbox(services.db, principal, address!);
      return services.mailboxes.setPassword(
        principal,
        target.id,
        parse(setPasswordInputSchema, { password: o.password }, '').password,
      );
    },
  },
  {
    name: 'token create',
    description: 'mint a mailbox token; the plaintext is printed once (and revealable for TOKEN_REVEAL_WINDOW)',
    args: ['address'],
    options: [
      { flags: '--name <name>', description: 'token name', default: 'cli-token' },
      { flags: '--scopes <list>', description: 'comma list of scopes', default: DEFAULT_INTEGRATION_SCOPES.join(',') },
      { flags: '--expires-in <days>', description: 'lifetime in days (default TOKEN_DEFAULT_TTL)' },
    ],
    output: 'json',
    holdAs: 'admin',
    async run(ctx, [address], o) {
      const { services } = ctx;
      const { principal, mailboxId } = await mailboxOf(ctx, address!);
      const days = o.expiresIn === undefined ? undefined : Number(o.expiresIn);
      if (days !== undefined && !(days > 0)) throw new AppError('EXPIRY_INVALID', '--expires-in: a number of days');
      const input = parse(
        createTokenInputSchema,
        {
          tokenName: o.name,
          scopes: o.scopes!.split(',').map((s) => s.trim()),
          ...(days ? { expiresAtTs: services.clock.now().getTime() + days * 86_400_000 } : {}),
        },
        'token',
      );
      return services.tokens.create(services.tokens.domain(principal, mailboxId), input);
    },
  },
  {
    name: 'token list',
    description: "list a mailbox's tokens (never their plaintext)",
    args: ['address'],
    options: [],
    output: 'json',
    holdAs: 'admin',
    async run(ctx, [address]) {
      const { principal, mailboxId } = await mailboxOf(ctx, address!);
      return ctx.services.tokens.list(ctx.services.tokens.domain(principal, mailboxId));
    },
  },
];

/** What the command prints on stdout for its result (without the final newline). */
export function printed(command: Pick<AdminCommand, 'output'>, result: unknown): string {
  return command.output === 'json' ? JSON.stringify(result, null, 2) : String(result);
}

async function mailboxOf(
  { services, session }: AdminContext,
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
