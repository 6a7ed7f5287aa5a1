import { randomBytes } from 'node:crypto';
import type { Database } from '../../../storage/database.js';
import { AppError, notFound } from '../../base/errors.js';
import type { Principal } from '../../access/principal.js';
import { requireScope } from '../../access/access.js';
import { parseMailboxAddress } from '../../base/address.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import type { Clock } from '../../base/time.js';
import type { TokenCipher } from '../../access/token-cipher.js';
import type { NetworkTargetPolicy } from '../../base/net/network-targets.js';
import { parseWebhookUrl, resolveWebhookTarget } from './webhook-target.js';
import {
  deleteWebhook,
  findWebhook,
  insertWebhook,
  listWebhooks,
  mailboxIdsOf,
  toWebhookView,
  type WebhookCaps,
  type WebhookOwner,
} from './webhook.store.js';
import type { CreateWebhookInput, CreatedWebhook, WebhookView } from './webhook.schemas.js';

/**
 * Webhook registrations (docs/contract.md, Webhooks). `/api/domain/webhooks` needs a domain token with
 * DomainManage and may name any mailboxes of the domain; `/api/mailbox/webhooks` needs a mailbox
 * token with WebhookManage and only ever covers its own mailbox. The secret is returned once and
 * kept encrypted under a key derived from the server key, bound to the webhook id. Live
 * registrations are capped per mailbox and per domain (docs/webhooks.md, "Limits"); every token
 * of the mailbox with WebhookManage, and the domain token, lists and removes the mailbox's webhooks
 * whoever registered them.
 */
export class WebhookService {
  constructor(
    private readonly db: Database,
    private readonly cipher: TokenCipher,
    private readonly clock: Clock,
    private readonly policy: NetworkTargetPolicy,
    private readonly caps: WebhookCaps,
  ) {}

  async create(principal: Principal, via: WebhookOwner['kind'], input: CreateWebhookInput): Promise<CreatedWebhook> {
    const owner = this.owner(principal, via);
    const url = parseWebhookUrl(input.url);
    // Refused now rather than failing silently later; the worker checks again before every send.
    await resolveWebhookTarget(url, this.policy);
    let mailboxIds: string[] | null = null;
    if (input.mailboxAddresses) {
      const addresses = [...new Set(input.mailboxAddresses.map((a) => parseMailboxAddress(a)))];
      if (owner.kind === 'mailbox' && addresses.some((a) => a !== principal.mailboxAddress))
        throw new AppError('MAILBOX_ADDRESS_FORBIDDEN');
      const found = await mailboxIdsOf(this.db, owner.domainId, addresses);
      if (found.length !== addresses.length) throw notFound('Mailbox');
      mailboxIds = found.map((m) => m.id).sort();
    }
    const id = newId(ID_PREFIX.webhook);
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    await insertWebhook(this.db, this.caps, {
      id,
      domainId: owner.domainId,
      mailboxId: owner.kind === 'mailbox' ? owner.mailboxId : null,
      url: url.toString(),
      eventTypes: input.eventTypes ? [...new Set(input.eventTypes)] : null,
      mailboxIds,
      secretCipher: this.cipher.encrypt(secret, id),
      tokenId: principal.tokenId,
      at: this.clock.now(),
    });
    const row = await findWebhook(this.db, owner, id);
    return { ...toWebhookView(row!), secret };
  }

  async list(principal: Principal, via: WebhookOwner['kind']): Promise<{ items: WebhookView[] }> {
    return { items: (await listWebhooks(this.db, this.owner(principal, via))).map(toWebhookView) };
  }

  async delete(principal: Principal, via: WebhookOwner['kind'], webhookId: string) {
    if (!(await deleteWebhook(this.db, this.owner(principal, via), webhookId))) throw notFound('Webhook');
    return { webhookId, deleted: true as const };
  }

  /** Scope and token kind per route; the kind mismatch is the 403 every token route gives. */
  private owner(principal: Principal, via: WebhookOwner['kind']): WebhookOwner {
    if (via === 'domain') {
      requireScope(principal, 'DomainManage');
      if (principal.kind !== 'domain') throw new AppError('TOKEN_KIND_FORBIDDEN', 'This route needs a domain token.');
      return { kind: 'domain', domainId: principal.domainId };
    }
    requireScope(principal, 'WebhookManage');
    if (principal.kind !== 'mailbox' || !principal.mailboxId)
      throw new AppError('TOKEN_KIND_FORBIDDEN', 'This route needs a mailbox token; use /api/domain/webhooks.');
    return { kind: 'mailbox', domainId: principal.domainId, mailboxId: principal.mailboxId };
  }
}
