import { z } from 'zod';
import type { Principal } from '../../access/principal.js';
import { requireDomainToken, requireScope, resolveMailbox } from '../../access/access.js';
import type { Database } from '../../../storage/database.js';
import type { CursorCodec } from '../../base/paging/cursor.js';
import { toTs } from '../../base/time.js';
import type { AuditEntryView, ListAuditInput } from './audit.schemas.js';
import type { AuditRow, AuditScope, AuditStore } from './audit.store.js';

const positionSchema = z.object({ t: z.number().int(), i: z.string().max(60) });

/** GET /api/mailbox/audit and GET /api/domain/audit (docs/api.md, "Audit trail"). */
export class AuditService {
  constructor(
    private readonly db: Database,
    private readonly store: AuditStore,
    private readonly cursors: CursorCodec,
  ) {}

  /** MailboxRead: a mailbox token reads its own trail; a domain token names the mailbox. */
  async listMailbox(principal: Principal, input: ListAuditInput) {
    requireScope(principal, 'MailboxRead');
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    return this.page(`audit:m:${mailbox.id}`, { mailboxId: mailbox.id }, input);
  }

  /** DomainManage with a domain token: every mailbox of the domain. */
  async listDomain(principal: Principal, input: ListAuditInput) {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    return this.page(`audit:d:${principal.domainId}`, { domainId: principal.domainId }, input);
  }

  private async page(cursorScope: string, scope: AuditScope, input: ListAuditInput) {
    const after = input.cursor ? this.cursors.decode(cursorScope, input.cursor, positionSchema) : null;
    const filter = { decision: input.decision ?? null, channel: input.channel ?? null };
    const rows = await this.store.page(scope, after, input.limit + 1, filter);
    const page = rows.slice(0, input.limit);
    const last = page[page.length - 1];
    return {
      items: page.map(toView),
      nextCursor:
        rows.length > input.limit && last
          ? this.cursors.encode(cursorScope, { t: toTs(last.created_at)!, i: last.id })
          : null,
    };
  }
}

const toView = (r: AuditRow): AuditEntryView => ({
  auditId: r.id,
  mailboxId: r.mailbox_id,
  mailboxAddress: r.mailbox_address,
  tokenId: r.token_id,
  actorAddress: r.actor_address,
  channel: r.channel,
  decision: r.decision,
  rule: r.rule,
  reason: r.reason,
  recipientCount: r.recipient_count,
  newRecipientCount: r.new_recipient_count,
  messageId: r.message_id,
  subject: r.message_subject,
  recipients: [...(r.message_to ?? []), ...(r.message_cc ?? []), ...(r.message_bcc ?? [])],
  tokenName: r.token_name,
  createdAtTs: toTs(r.created_at)!,
});
