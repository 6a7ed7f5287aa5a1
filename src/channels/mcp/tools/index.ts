import type { McpTool } from '../tool.js';
import { listMessagesTool } from './list-messages.js';
import { getMessageTool } from './get-message.js';
import { getThreadTool } from './get-thread.js';
import { sendMailTool } from './send-mail.js';
import { replyMessageTool } from './reply-message.js';
import { setReadStateTool } from './set-read-state.js';
import { deleteMessagesTool } from './delete-messages.js';
import { uploadAttachmentTool } from './upload-attachment.js';
import { listMailboxesTool } from './list-mailboxes.js';
import { waitForMessageTool } from './wait-for-message.js';
import { listPendingApprovalsTool } from './list-pending-approvals.js';
import { decideApprovalTool } from './decide-approval.js';
import { searchMessagesTool } from './search-messages.js';
import { getVerificationCodeTool } from './get-verification-code.js';
import { getAttachmentTool } from './get-attachment.js';
import { getMailboxStorageTool } from './get-mailbox-storage.js';
import { forwardMessageTool } from './forward-message.js';
import { listThreadsTool } from './list-threads.js';
import { setThreadStateTool } from './set-thread-state.js';
import { cancelScheduledSendTool } from './cancel-scheduled-send.js';
import { createDraftTool } from './create-draft.js';
import { listDraftsTool } from './list-drafts.js';
import { getDraftTool } from './get-draft.js';
import { updateDraftTool } from './update-draft.js';
import { deleteDraftTool } from './delete-draft.js';
import { sendDraftTool } from './send-draft.js';

/** Every tool, in the order tools/list shows them. Only upload_attachment depends on config (its size cap). */
export function allTools(limits: { maxAttachmentBytes: number }): McpTool[] {
  return [
    listMessagesTool,
    getMessageTool,
    getThreadTool,
    sendMailTool,
    replyMessageTool,
    setReadStateTool,
    deleteMessagesTool,
    uploadAttachmentTool(limits.maxAttachmentBytes),
    listMailboxesTool,
    waitForMessageTool,
    listPendingApprovalsTool,
    decideApprovalTool,
    searchMessagesTool,
    getVerificationCodeTool,
    getAttachmentTool,
    getMailboxStorageTool,
    forwardMessageTool,
    listThreadsTool,
    setThreadStateTool,
    cancelScheduledSendTool,
    createDraftTool,
    listDraftsTool,
    getDraftTool,
    updateDraftTool,
    deleteDraftTool,
    sendDraftTool,
  ] as unknown as McpTool[];
}
