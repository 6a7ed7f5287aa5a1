import { idempotencyKeySchema, sendAcceptedSchema, sendInputSchema } from '../../../core/flows/sending/send.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { MAILBOX_ADDRESS_ACTING } from './fields.js';

/** The arguments send_mail and reply_message share with their HTTP bodies, described once. */
export const OUTGOING_FIELDS = {
  mailboxAddress: MAILBOX_ADDRESS_ACTING,
  ccAddresses: 'Cc addresses (a list). Duplicates collapse.',
  bccAddresses: 'Bcc addresses (a list); recipients do not see them.',
  attachmentIds:
    'attachmentUploadId values from upload_attachment (at most 100). Each upload can be attached once, by the mailbox that uploaded it.',
  bodyText:
    'Plain-text body (up to 1,048,576 characters). bodyText or bodyHtml is required; an empty string is allowed.',
  bodyHtml: 'HTML body (up to 1,048,576 characters). With bodyText too, the mail carries both (text+html).',
} as const;

/** Scheduled sends (send_mail and reply_message). */
export const SCHEDULE_FIELDS = {
  sendAt:
    'Optional: send later, at this time (milliseconds since the epoch). The result is status "scheduled" with sendAtTs; ' +
    'nothing leaves before it, and the policy, rate limit and approval decide it when it leaves. At or before now it is sent at once.',
  cancelOnReply:
    'With sendAt: cancel it if a message arrives in its thread before then (a follow-up that is no longer needed). Default false.',
} as const;

/** What a scheduled send means for the agent, in both tools' descriptions. */
export const SCHEDULE_NOTE =
  'With sendAt it is scheduled (get_message shows status "scheduled" until it leaves, then "queued"; "cancelled" if ' +
  'cancelOnReply cancelled it). ';

/** HTTP's Idempotency-Key header, as an argument (MCP has no per-call headers). */
export const idempotencyKeyArgument = idempotencyKeySchema
  .optional()
  .describe(
    'Optional retry key, 1..200 visible ASCII characters, per mailbox. Retrying with the same key and the same arguments returns the ' +
      'first result without sending again (and costs no rate-limit budget); the same key with different arguments is error 409. ' +
      'Use a fresh key per distinct message.',
  );

export const SEND_LIMITS_NOTE =
  'The answer status "queued" means accepted and stored, NOT delivered: delivery happens afterwards; read the outcome later with ' +
  'get_message (deliveryStatus queued, deferred, delivered or failed). Sending is rate limited per mailbox (error 429 with ' +
  'retryAfterSeconds: wait that long, then retry with the same idempotencyKey). At least one recipient; To + Cc + Bcc together ' +
  'at most the server limit (100 by default); subject at most 998 characters. Needs the MailboxSend scope. Errors come back as ' +
  'isError with text {"code", "errorCode", "errMsg"}: 400 invalid argument or unknown attachment, 403 missing scope, ' +
  "404 unknown mailbox, 409 idempotencyKey reused with other arguments, 429 rate limit. The mailbox's outbound policy " +
  'applies: a refused recipient is error 403 naming the rule (e.g. blockedRecipients, externalSending, ' +
  'maxNewRecipientsPerDay); a reply to an automatic or bulk message is 403 (autoReplyGuard); too many replies to one ' +
  'counterparty in an hour is 429. When the policy requires approval the status is "pending_approval": the mail waits ' +
  'for a person to approve it (see list_pending_approvals); do not resend it.';

/** POST /api/messages/send. */
export const sendMailTool = defineTool({
  name: 'send_mail',
  title: 'Send an e-mail',
  description:
    "Send a new e-mail from a mailbox of this service (From is the mailbox's address and display name). Starts a new thread; " +
    'to answer a message use reply_message instead. Sending in a thread sets it awaiting_reply (see list_threads). ' +
    'To test without real delivery, send to the simulator: delivered@simulator.invalid (delivered), ' +
    'bounce@simulator.invalid (fails, with a bounce in your mailbox), defer@simulator.invalid (deferred once, then ' +
    'delivered), suppressed@simulator.invalid (refused as suppressed); nothing leaves the service. ' +
    SCHEDULE_NOTE +
    SEND_LIMITS_NOTE,
  input: describeFields(sendInputSchema, {
    ...OUTGOING_FIELDS,
    ...SCHEDULE_FIELDS,
    toAddress: 'One address, or a list of addresses.',
    subject: 'Subject line (at most 998 characters; line breaks become spaces). Default empty.',
  }).safeExtend({ idempotencyKey: idempotencyKeyArgument }),
  output: sendAcceptedSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  run: ({ idempotencyKey, ...input }, { principal, services }) =>
    services.sending.send(principal, input, { channel: 'mcp', idempotencyKey }),
});
