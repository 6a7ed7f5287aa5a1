import MailComposer from 'nodemailer/lib/mail-composer';
import type { BlobStore } from '../../../storage/blobs/blob-store.js';
import type { AttachmentFile } from '../attachments/attachment.store.js';

export interface ComposeInput {
  from: { address: string; name: string };
  to: string[];
  cc: string[];
  subject: string;
  text: string | null;
  html: string | null;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  date: Date;
  attachments: AttachmentFile[];
  /** RFC 3834 §5 Auto-Submitted value (the outbound policy's loop guard), or null for none. */
  autoSubmitted?: string | null;
}

/**
 * The RFC 5322 / MIME form of a message sent through the API (it has no raw source), built with
 * nodemailer's MailComposer: text, HTML or both as multipart/alternative, attachments streamed
 * from the blob store. Bcc recipients are never written into the header.
 */
export async function composeMessage(input: ComposeInput, blobs: BlobStore): Promise<Buffer> {
  const attachments = await Promise.all(
    input.attachments.map(async (a) => ({
      filename: a.filename,
      contentType: a.contentType,
      content: await blobs.stream(a.blobKey),
    })),
  );
  const composer = new MailComposer({
    from: { name: input.from.name, address: input.from.address },
    to: input.to,
    cc: input.cc.length ? input.cc : undefined,
    subject: input.subject,
    ...(input.text !== null ? { text: input.text } : {}),
    ...(input.html !== null ? { html: input.html } : {}),
    ...(input.messageId ? { messageId: input.messageId } : {}),
    ...(input.inReplyTo ? { inReplyTo: input.inReplyTo } : {}),
    ...(input.references.length ? { references: input.references } : {}),
    date: input.date,
    attachments,
    ...(input.autoSubmitted ? { headers: { 'Auto-Submitted': input.autoSubmitted } } : {}),
  });
  return new Promise((resolve, reject) =>
    composer.compile().build((err, message) => (err ? reject(err) : resolve(message))),
  );
}
