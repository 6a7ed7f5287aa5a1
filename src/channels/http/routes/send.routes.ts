import { route } from '../route.js';
import { declaredFileBytes, readUploadForm } from '../upload-form.js';
import {
  forwardInputSchema,
  replyInputSchema,
  replyParamsSchema,
  sendAcceptedSchema,
  sendInputSchema,
  cancelScheduleResultSchema,
} from '../../../core/flows/sending/send.schemas.js';
import { attachmentUploadedSchema } from '../../../core/state/attachments/attachment.schemas.js';

const idempotencyKeyOf = (header: string): string | undefined => header || undefined;

/** Send, reply (202, queued or scheduled), cancelling a scheduled send, and attachment upload (201) (spec, Messages). */
export const sendRoutes = [
  route({
    method: 'POST',
    path: '/api/messages/send',
    summary: 'Queue a new message (202; pending_approval when the policy holds it). Honours Idempotency-Key.',
    idempotent: true,
    auth: 'bearer',
    scope: 'MailboxSend',
    tokenKinds: ['mailbox', 'domain'],
    body: sendInputSchema,
    response: sendAcceptedSchema,
    status: 202,
    handler: ({ principal, body, services, ctx }) =>
      services.sending.send(principal, body, {
        channel: 'http',
        idempotencyKey: idempotencyKeyOf(ctx.get('idempotency-key')),
      }),
  }),
  route({
    method: 'POST',
    path: '/api/messages/:messageId/reply',
    summary: "Queue a reply in the parent's thread (202). Honours Idempotency-Key.",
    idempotent: true,
    auth: 'bearer',
    scope: 'MailboxSend',
    tokenKinds: ['mailbox', 'domain'],
    params: replyParamsSchema,
    body: replyInputSchema,
    response: sendAcceptedSchema,
    status: 202,
    handler: ({ principal, params, body, services, ctx }) =>
      services.sending.reply(principal, params.messageId, body, {
        channel: 'http',
        idempotencyKey: idempotencyKeyOf(ctx.get('idempotency-key')),
      }),
  }),
  route({
    method: 'POST',
    path: '/api/messages/:messageId/forward',
    summary:
      'Forward a message to new recipients with its attachments, in a new thread (202). Honours Idempotency-Key.',
    idempotent: true,
    auth: 'bearer',
    scope: 'MailboxSend',
    tokenKinds: ['mailbox', 'domain'],
    params: replyParamsSchema,
    body: forwardInputSchema,
    response: sendAcceptedSchema,
    status: 202,
    handler: ({ principal, params, body, services, ctx }) =>
      services.sending.forward(principal, params.messageId, body, {
        channel: 'http',
        idempotencyKey: idempotencyKeyOf(ctx.get('idempotency-key')),
      }),
  }),
  route({
    method: 'DELETE',
    path: '/api/messages/:messageId/schedule',
    summary: 'Cancel a scheduled send that has not left (idempotent; 409 once it left).',
    auth: 'bearer',
    scope: 'MailboxSend',
    tokenKinds: ['mailbox', 'domain'],
    params: replyParamsSchema,
    target: 'message',
    response: cancelScheduleResultSchema,
    status: 200,
    handler: ({ principal, params, services }) =>
      services.sending.cancelSchedule(principal, { messageId: params.messageId }),
  }),
  route({
    method: 'POST',
    path: '/api/messages/attachments',
    summary: 'Upload one outbound attachment (multipart: mailboxAddress, file).',
    auth: 'bearer',
    scope: 'AttachmentWrite',
    tokenKinds: ['mailbox', 'domain'],
    body: 'multipart',
    response: attachmentUploadedSchema,
    status: 201,
    handler: async ({ principal, services, ctx }) => {
      // Refused before a byte is read or a slot is waited for (a mailbox at a cap, a declared size that cannot fit).
      await services.attachments.beforeUpload(principal, declaredFileBytes(ctx));
      return services.attachments.withUploadSlot(async () => {
        const form = await readUploadForm(ctx, services.attachments);
        return services.attachments.commit(principal, form.mailboxAddress, form.staged);
      });
    },
  }),
];
