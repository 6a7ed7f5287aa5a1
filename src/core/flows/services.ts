import type { TokenCipher } from '../access/token-cipher.js';
import type { SendService } from './sending/send.service.js';
import type { DraftSendService } from './sending/draft-send.js';
import type { InboundStore } from './inbound/inbound.store.js';
import type { MailTransport } from './delivery/mail-transport.js';
import type { OutboundPolicy } from './policy/outbound-policy.js';
import type { MailboxPolicyService } from './policy/mailbox-policy.service.js';
import type { ApprovalService } from './policy/approval.service.js';
import type { ApprovalStore } from './policy/approval.store.js';
import type { ApprovalLinkStore } from './policy/approval-link.store.js';
import type { ApprovalLinkService } from './policy/approval-link.service.js';
import type { WebhookService } from './webhooks/webhook.service.js';
import type { EventSubscriptionService } from './event-subscriptions/subscription.service.js';
import type { ScreeningReleaseService } from './inbound/release.service.js';

/** The flows floor's share of `Services`: mail going in and out, and what decides and follows it. */
export interface FlowServices {
  sending: SendService;
  /** Sending a stored draft through the one send path (POST /api/drafts/{draftId}/send, MCP send_draft). */
  draftSending: DraftSendService;
  inbound: InboundStore;
  /** SMTP submission and inbound use cases, DKIM keys and external delivery. */
  transport: MailTransport;
  /** The one outbound policy decision (every send path and SMTP RCPT TO). */
  policy: OutboundPolicy;
  /** Mailbox policy routes (GET/PUT). */
  mailboxPolicies: MailboxPolicyService;
  /** Approve/reject of held messages and their expiry. */
  approvals: ApprovalService;
  approvalStore: ApprovalStore;
  /** Approval links' rows and notices (the notice worker claims them). */
  approvalLinkStore: ApprovalLinkStore;
  /** The approval page's public routes: open a link, decide through it. */
  approvalLinks: ApprovalLinkService;
  /** Webhook registrations (HTTP /api/domain/webhooks, /api/mailbox/webhooks). */
  webhooks: WebhookService;
  /** Seals webhook secrets (a key of its own, derived from the server key). */
  webhookCipher: TokenCipher;
  /** Webhook subscriptions of the MCP events extension (delivered by the webhook worker). */
  eventSubscriptions: EventSubscriptionService;
  /** Release of inbound mail held by screening (docs/screening.md). */
  screeningRelease: ScreeningReleaseService;
}
