import type { MailboxService } from './mailboxes/mailbox.service.js';
import type { MessageService } from './messages/message.service.js';
import type { ChangeMarks } from './messages/change-mark.js';
import type { ChangeSequences } from './messages/change-sequence.js';
import type { WaitService } from './messages/wait.service.js';
import type { AttachmentService } from './attachments/attachment.service.js';
import type { AttachmentTextService } from './attachments/text/attachment-text.service.js';
import type { EventService } from './events/event.service.js';
import type { AuditService } from './audit/audit.service.js';
import type { AuditStore } from './audit/audit.store.js';
import type { SearchService } from './search/search.service.js';
import type { SearchIndex } from './search/search-index.store.js';
import type { ReplyTextBackfill } from './extraction/reply-text-backfill.js';
import type { StorageService } from './quota/storage.service.js';
import type { ThreadStateService } from './messages/thread-state.service.js';
import type { FollowUps } from './messages/follow-up.js';
import type { DraftService } from './drafts/draft.service.js';

/** The mail-and-state floor's share of `Services`: mailboxes, messages and what is kept about them. */
export interface StateServices {
  mailboxes: MailboxService;
  messages: MessageService;
  /** Change marks of reads: HTTP ETags, MCP ifChangedSince (docs/api.md, "Change marks and ETags"). */
  changeMarks: ChangeMarks;
  /** Each mailbox's change sequence, from memory where the bus keeps it fresh (marks and waits). */
  changeSequences: ChangeSequences;
  attachments: AttachmentService;
  /** Text of PDF/DOCX/HTML/text attachments (HTTP …/attachments/{id}/text, MCP get_attachment). */
  attachmentText: AttachmentTextService;
  events: EventService;
  /** Long-poll for the next message (HTTP /api/messages/wait, MCP wait_for_message). */
  waits: WaitService;
  audit: AuditService;
  auditStore: AuditStore;
  /** Full-text search (HTTP /api/messages/search, MCP search_messages). */
  search: SearchService;
  searchIndex: SearchIndex;
  replyTextBackfill: ReplyTextBackfill;
  /** Storage quota routes (mailbox and domain). */
  storage: StorageService;
  /** Thread workflow state: list by state, set (HTTP /api/threads, MCP list_threads / set_thread_state). */
  threads: ThreadStateService;
  /** The worker's thread.follow-up-due emission. */
  followUps: FollowUps;
  /** Drafts: create, list, read, change, delete (HTTP /api/drafts, MCP *_draft); sending is a flow. */
  drafts: DraftService;
}
