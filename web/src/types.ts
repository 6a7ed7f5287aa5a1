/** Wire shapes the console reads (docs/api.md; the OpenAPI document at /api/openapi.json). */
export interface MessageSummary {
  messageId: string;
  threadId: string;
  direction: 'inbound' | 'outbound';
  subject: string;
  fromAddress: string;
  fromDisplayName: string;
  toAddress: string | null;
  mailboxAddress: string;
  attachmentCount: number;
  isRead: boolean;
  createdAtTs: number;
  /** Added by the inbound-trust work: shown when the server sends them. */
  origin?: 'internal' | 'external';
  authenticated?: boolean;
  approvalStatus?: 'pending' | 'approved' | 'rejected' | 'expired' | null;
  /** The first words of the text body. */
  snippet?: string;
  /** A scheduled send's due time (outbound); null when sent at once. */
  sendAtTs?: number | null;
  /** Inbound screening (docs/screening.md); `held` while it waits for a person's release. */
  screening?: { score: number; signals: string[]; held: boolean } | null;
}

export interface Attachment {
  attachmentId: string;
  filename: string;
  contentType: string;
  sizeBytes: number;
  /** Content-ID without angle brackets: `cid:<contentId>` in bodyHtml names this part. */
  contentId?: string | null;
}

export interface MessageDetail extends MessageSummary {
  toAddresses: string[];
  ccAddresses: string[];
  bccAddresses: string[];
  bodyText: string | null;
  bodyHtml: string | null;
  attachments: Attachment[];
  deliveryStatus: string | null;
  /** Outbound: `scheduled` until it leaves, `cancelled`, `pending_approval` or `queued`. */
  status?: 'scheduled' | 'queued' | 'cancelled' | 'pending_approval' | null;
  deliveries: { address: string; kind: string; status: string; remoteReply: string | null }[];
  rawContentPath: string | null;
  authentication?: Record<string, unknown> | null;
}

/** A draft in the Drafts folder (GET /api/drafts); the detail adds the bodies. */
export interface DraftSummary {
  draftId: string;
  mailboxAddress: string;
  toAddress: string[];
  ccAddresses: string[];
  bccAddresses: string[];
  subject: string | null;
  snippet: string;
  attachmentIds: string[];
  attachments: Attachment[];
  parentMessageId: string | null;
  replyAll: boolean;
  sendAtTs: number | null;
  createdAtTs: number;
  updatedAtTs: number;
}

export interface Draft extends DraftSummary {
  bodyText: string | null;
  bodyHtml: string | null;
}

/** A thread's workflow state (docs/workflow.md, "Thread state"). */
export type ThreadState = 'open' | 'awaiting_reply' | 'needs_human' | 'closed';

export const THREAD_STATES: { id: ThreadState; label: string }[] = [
  { id: 'open', label: 'Open' },
  { id: 'awaiting_reply', label: 'Awaiting reply' },
  { id: 'needs_human', label: 'Needs human' },
  { id: 'closed', label: 'Closed' },
];

export const stateLabel = (s: ThreadState): string => THREAD_STATES.find((t) => t.id === s)?.label ?? s;

/** A thread in GET /api/threads and the answer of PUT /api/threads/{threadId}/state. */
export interface ThreadSummary {
  threadId: string;
  subject: string;
  state: ThreadState;
  awaitingReplySinceTs: number | null;
  followUpAtTs: number | null;
  followUpNotifiedAtTs: number | null;
  lastMessageAtTs: number;
  createdAtTs: number;
}

/** GET /api/threads/{threadId}: the thread's state beside its messages, oldest first. */
export interface ThreadDetail {
  threadId: string;
  subject: string;
  state: ThreadState;
  awaitingReplySinceTs: number | null;
  followUpAtTs: number | null;
  messages: MessageDetail[];
}

/** A mailbox's outbound policy (GET /api/mailbox/policy; docs/api.md, "Outbound policy"). */
export interface MailboxPolicy {
  mailboxId: string;
  mailboxAddress: string;
  allowedRecipients: string[];
  blockedRecipients: string[];
  maxRecipientsPerMessage: number | null;
  maxNewRecipientsPerDay: number | null;
  externalSending: boolean;
  approval: 'none' | 'external' | 'new-recipients' | 'all';
  autoReplyGuard: boolean;
  inboundScreening: { holdAtScore: number | null };
  approverAddresses: string[];
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  totalCount: number;
}

export interface TokenRecord {
  tokenId: string;
  tokenName: string;
  tokenPrefix: string;
  scopes: string[];
  createdSource: string;
  expiresAtTs: number | null;
  disabledAtTs: number | null;
  lastUsedAtTs: number | null;
  canRevealPlaintext: boolean;
  createdAtTs: number;
}

export interface MailboxView {
  mailboxId: string;
  address: string;
  displayName: string;
}

/** Every scope a mailbox token can hold (src/core/access/scopes.ts), with what it allows. */
export const MAILBOX_SCOPES: { scope: string; what: string; domainOnly?: boolean }[] = [
  { scope: 'MailboxRead', what: 'read messages, threads, search, audit' },
  { scope: 'MailboxSend', what: 'send and reply' },
  { scope: 'AttachmentWrite', what: 'upload attachments' },
  { scope: 'TokenManage', what: "manage this mailbox's tokens" },
  { scope: 'MailboxDelete', what: 'delete messages' },
  { scope: 'MailboxApprove', what: 'approve or reject held mail', domainOnly: true },
  { scope: 'WebhookManage', what: 'manage webhooks', domainOnly: true },
];

export const when = (ts: number | null | undefined): string => (ts ? new Date(ts).toLocaleString() : '—');
