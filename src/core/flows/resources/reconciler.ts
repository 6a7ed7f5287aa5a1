import { createHmac, randomBytes } from 'node:crypto';
import { isAppError } from '../../base/errors.js';
import type { Logger } from '../../base/logger.js';
import type { Clock } from '../../base/time.js';
import type { TokenGovernance } from '../../access/token-governance.js';
import type { TokenMinter } from '../../access/token-minter.js';
import { DOMAIN_TOKEN_SCOPES, MAILBOX_TOKEN_SCOPES } from '../../access/scopes.js';
import { hashPassword, verifyPassword } from '../../access/password.js';
import { PASSWORD_LENGTH, passwordSchema } from '../../state/mailboxes/mailbox.schemas.js';
import type { Database, Sql } from '../../../storage/database.js';
import {
  refOf,
  resourceKeyOf,
  tokenSecretNameOf,
  type DeclaredResource,
  type DomainResource,
  type MailboxResource,
  type ResourceRef,
} from './manifest.schema.js';
import type { DkimStatus, ReconcileResult, SecretStore, StatusSink } from './ports.js';
import { keepOrMintToken, sameSecret, type TokenOwner } from './resource-token.js';
import { convergeDomainRow, type RowOutcome } from './domain-converge.js';
import { convergeMailboxRows } from './mailbox-converge.js';
import {
  deactivateAddresses,
  disableDomainByResourceKey,
  deleteExpiredMailboxByResourceKey,
  disableMailboxByResourceKey,
  lockResourceName,
  setMailboxPasswordHash,
  type MailboxRow,
} from './resource.store.js';
import { NotReadyError, type Problem } from './not-ready.js';
import { StatusReporter } from './status-reporter.js';

export interface ReconcilerDeps {
  db: Database;
  tokens: TokenGovernance;
  minter: TokenMinter;
  clock: Clock;
  log: Logger;
  secrets: SecretStore;
  status: StatusSink;
  /** Lifetimes of the tokens written to secrets (config TOKEN_DEFAULT_TTL / BOOTSTRAP_TOKEN_TTL). */
  domainTokenTtlMs: number;
  mailboxTokenTtlMs: number;
  /** DKIM records for Domain status (the key is generated on first use); absent: no dkim in status. */
  dkim?: { record(domainId: string): Promise<DkimStatus> };
}

/**
 * The reconcile core for Domain and Mailbox resources. Level-triggered and idempotent: each
 * call reads the current rows and converges them to the resource, so calling it again changes
 * nothing. Never throws: every failure becomes Ready=False in the status and in the result.
 */
export class ResourceReconciler {
  private readonly reporter: StatusReporter;
  /** Per process: HMAC of the last password value applied per mailbox, so unchanged passwords cost no scrypt. */
  private readonly appliedPasswords = new Map<string, { fingerprint: string; hash: string }>();
  private readonly fingerprintKey = randomBytes(32);

  constructor(private readonly deps: ReconcilerDeps) {
    this.reporter = new StatusReporter(deps.status, deps.clock, deps.log);
  }

  async reconcileDomain(res: DomainResource): Promise<ReconcileResult> {
    return this.run(res, async (trx) => {
      const { domainId, outcome } = await convergeDomainRow(trx, res, this.deps.clock.now());
      const token = await this.ensureTokenSecret(trx, res, {
        kind: 'domain',
        domainId,
        mailboxId: null,
        scopes: DOMAIN_TOKEN_SCOPES,
        ttlMs: this.deps.domainTokenTtlMs,
      });
      return { outcome: bump(outcome, token), problems: [], domainId, message: `domain ${res.spec.domain} is ready` };
    });
  }

  async reconcileMailbox(res: MailboxResource): Promise<ReconcileResult> {
    return this.run(res, async (trx) => {
      const rows = await convergeMailboxRows(trx, res, this.deps.clock.now());
      const { mailbox } = rows;
      if (rows.expired) {
        // Its tokens are refused already; the Secret that holds one goes too.
        await this.deps.secrets.delete?.(res.metadata.namespace, tokenSecretNameOf(res));
        return { outcome: rows.outcome, problems: rows.problems, domainId: mailbox.domain_id, message: '' };
      }
      const password = await this.convergePassword(trx, res, mailbox);
      const token = await this.ensureTokenSecret(trx, res, {
        kind: 'mailbox',
        domainId: mailbox.domain_id,
        mailboxId: mailbox.id,
        scopes: MAILBOX_TOKEN_SCOPES,
        ttlMs: this.deps.mailboxTokenTtlMs,
      });
      const problems = [...rows.problems, ...(typeof password === 'object' ? [password] : [])];
      return {
        outcome: bump(bump(rows.outcome, password === true), token),
        problems,
        domainId: mailbox.domain_id,
        mailboxId: mailbox.id,
        message: `mailbox ${mailbox.address} is ready`,
      };
    });
  }

  /** The Domain resource is gone: disable the domain and its domain tokens (rows are kept). */
  async deleteDomain(ref: ResourceRef, opts: { tokenSecretName?: string | undefined } = {}): Promise<ReconcileResult> {
    return this.runDelete(ref, opts, async (trx, now) => {
      const domainId = await disableDomainByResourceKey(trx, resourceKeyOf(ref), now);
      if (domainId !== undefined) await this.deps.tokens.disableAll(trx, { domainId, kind: 'domain' });
      return domainId !== undefined;
    });
  }

  /** The Mailbox resource is gone: disable the mailbox, its tokens, aliases and identities. */
  async deleteMailbox(ref: ResourceRef, opts: { tokenSecretName?: string | undefined } = {}): Promise<ReconcileResult> {
    return this.runDelete(ref, opts, async (trx, now) => {
      if (await deleteExpiredMailboxByResourceKey(trx, resourceKeyOf(ref), now)) return true;
      const mailboxId = await disableMailboxByResourceKey(trx, resourceKeyOf(ref), now);
      if (mailboxId === undefined) return false;
      await this.deps.tokens.disableAll(trx, { mailboxId });
      await deactivateAddresses(trx, mailboxId, 'all');
      return true;
    });
  }

  private async run(
    res: DeclaredResource,
    converge: (
      trx: Sql,
    ) => Promise<{ outcome: RowOutcome; problems: Problem[]; message: string; domainId?: string; mailboxId?: string }>,
  ): Promise<ReconcileResult> {
    const ref = refOf(res);
    const ids: { domainId?: string; mailboxId?: string; dkim?: DkimStatus } = {};
    let result: ReconcileResult;
    try {
      const done = await this.deps.db.tx(async (trx) => {
        await lockResource(trx, ref);
        return converge(trx);
      });
      if (done.domainId) ids.domainId = done.domainId;
      if (done.mailboxId) ids.mailboxId = done.mailboxId;
      // After the commit: the key row references the domain row this transaction may have created.
      if (res.kind === 'Domain' && done.domainId && this.deps.dkim) {
        const r = await this.deps.dkim.record(done.domainId).catch(() => undefined);
        if (r) ids.dkim = { selector: r.selector, name: r.name, type: r.type, value: r.value };
      }
      const problem = done.problems[0];
      result = problem
        ? {
            ref,
            outcome: done.outcome,
            ready: false,
            reason: problem.reason,
            message: done.problems.map((p) => p.message).join('; '),
            ...ids,
          }
        : { ref, outcome: done.outcome, ready: true, reason: 'Reconciled', message: done.message, ...ids };
    } catch (err) {
      result = { ref, outcome: 'failed', ready: false, ...describeFailure(err) };
    }
    this.logResult(result);
    await this.reporter.report(ref, res.metadata.generation ?? null, result, tokenSecretNameOf(res));
    return result;
  }

  private async runDelete(
    ref: ResourceRef,
    opts: { tokenSecretName?: string | undefined },
    disable: (trx: Sql, now: Date) => Promise<boolean>,
  ): Promise<ReconcileResult> {
    let result: ReconcileResult;
    try {
      const changed = await this.deps.db.tx(async (trx) => {
        await lockResource(trx, ref);
        return disable(trx, this.deps.clock.now());
      });
      if (opts.tokenSecretName) await this.deps.secrets.delete?.(ref.namespace, opts.tokenSecretName);
      result = {
        ref,
        outcome: changed ? 'deleted' : 'unchanged',
        ready: false,
        reason: 'Deleted',
        message: 'the resource was deleted; what it created is disabled',
      };
    } catch (err) {
      result = { ref, outcome: 'failed', ready: false, ...describeFailure(err) };
    }
    this.reporter.forget(ref);
    this.logResult(result);
    return result;
  }

  /** Writes the token secret when its token had to be (re)minted or its content drifted; true when written. */
  private async ensureTokenSecret(
    trx: Sql,
    res: DeclaredResource,
    owner: Omit<TokenOwner, 'resourceKey'>,
  ): Promise<boolean> {
    const ref = refOf(res);
    const secretName = tokenSecretNameOf(res);
    const held = await this.deps.secrets.get(ref.namespace, secretName);
    const { data, minted } = await keepOrMintToken(
      trx,
      this.deps.minter,
      this.deps.clock,
      { ...owner, resourceKey: resourceKeyOf(ref) },
      held,
    );
    if (sameSecret(held, data)) return false;
    // Inside the transaction: if the write fails, the new token is rolled back with it.
    await this.deps.secrets.put(ref.namespace, secretName, { ...data }, ref);
    this.deps.log.info('resource.token_secret_written', {
      kind: ref.kind,
      namespace: ref.namespace,
      name: ref.name,
      secret: secretName,
      tokenId: data.tokenId,
      minted,
    });
    return true;
  }

  /**
   * Applies the password from `passwordSecretRef`: true when it changed, a Problem when it
   * cannot be applied. Without a ref the password is left alone (the API may set one). With a
   * ref the declared value wins, also over a password set later through the API.
   */
  private async convergePassword(trx: Sql, res: MailboxResource, mailbox: MailboxRow): Promise<boolean | Problem> {
    const secretRef = res.spec.passwordSecretRef;
    if (!secretRef) return false;
    const data = await this.deps.secrets.get(res.metadata.namespace, secretRef.name);
    const value = data?.[secretRef.key];
    if (value === undefined) {
      return {
        reason: 'SecretNotFound',
        message: `password secret ${res.metadata.namespace}/${secretRef.name} ${data ? `has no key ${secretRef.key}` : 'does not exist'}`,
      };
    }
    // The rule of POST /api/domain/mailboxes/{id}/password (mailbox.schemas.ts).
    if (!passwordSchema.safeParse(value).success) {
      return {
        reason: 'PasswordInvalid',
        message: `the password in secret ${secretRef.name} must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters`,
      };
    }
    const fingerprint = createHmac('sha256', this.fingerprintKey).update(value).digest('hex');
    const applied = this.appliedPasswords.get(mailbox.id);
    if (applied && applied.fingerprint === fingerprint && applied.hash === mailbox.password_hash) return false;
    if (mailbox.password_hash && (await verifyPassword(value, mailbox.password_hash))) {
      this.appliedPasswords.set(mailbox.id, { fingerprint, hash: mailbox.password_hash });
      return false;
    }
    const hash = await hashPassword(value);
    await setMailboxPasswordHash(trx, mailbox.id, hash);
    this.appliedPasswords.set(mailbox.id, { fingerprint, hash });
    return true;
  }

  private logResult(r: ReconcileResult): void {
    const fields = {
      kind: r.ref.kind,
      namespace: r.ref.namespace,
      name: r.ref.name,
      outcome: r.outcome,
      reason: r.reason,
      message: r.message,
    };
    if (r.outcome === 'failed' && r.reason === 'ReconcileError')
      this.deps.log.error('resource.reconcile_failed', fields);
    else if (r.outcome === 'deleted') this.deps.log.info('resource.deleted', fields);
    else if (!r.ready && r.reason !== 'Deleted') this.deps.log.warn('resource.not_ready', fields);
    else if (r.outcome !== 'unchanged') this.deps.log.info('resource.reconciled', fields);
    else this.deps.log.debug('resource.reconciled', fields);
  }
}

/** Serialises reconciles of one resource across processes (two replicas reading one directory). */
async function lockResource(trx: Sql, ref: ResourceRef): Promise<void> {
  await lockResourceName(trx, `mailbox-service/${ref.kind}/${resourceKeyOf(ref)}`);
}

const bump = (outcome: RowOutcome, changed: boolean): RowOutcome =>
  outcome === 'unchanged' && changed ? 'updated' : outcome;

function describeFailure(err: unknown): { reason: string; message: string } {
  if (err instanceof NotReadyError) return { reason: err.reason, message: err.message };
  if (isAppError(err) && err.status < 500) return { reason: 'Invalid', message: err.message };
  return { reason: 'ReconcileError', message: err instanceof Error ? err.message : String(err) };
}
