import { isAddress, normalizeAddress } from '../../base/address.js';
import type { MailboxRef } from '../../access/principal.js';
import type { AttachmentFile } from '../../state/attachments/attachment.store.js';
import { insertAttachment } from '../../state/attachments/attachment.store.js';
import type { ParsedMessage } from '../../state/mail/mime-parse.js';
import type { Database } from '../../../storage/database.js';
import type { OutboundDraft } from '../sending/outbound.store.js';
import { cleanMessageIds, findParentByMessageIds, inboundReferences } from '../delivery/threading.js';

/**
 * The OutboundDraft of a message submitted over SMTP. The envelope decides who receives it
 * (RFC 5321 §3.3: RCPT TO, not the header); the header decides how each is listed: To and Cc
 * recipients that are also envelope recipients keep their kind, every other envelope recipient
 * is a Bcc. A reply (In-Reply-To/References naming a message of the mailbox) joins its thread.
 */
export async function submittedDraft(
  db: Database,
  mailbox: MailboxRef,
  envelope: { rcptTo: readonly string[] },
  message: ParsedMessage,
  stored: { rawKey: string; rawSizeBytes: number; attachmentIds: string[] },
): Promise<OutboundDraft> {
  const recipients = envelopeRecipients(envelope);
  const inEnvelope = (a: string) => recipients.includes(a);
  const to = message.to.filter(inEnvelope);
  const cc = message.cc.filter((a) => inEnvelope(a) && !to.includes(a));
  const bcc = recipients.filter((a) => !to.includes(a) && !cc.includes(a));
  const references = inboundReferences(message.inReplyTo, message.references);
  const parent = await findParentByMessageIds(db.db, mailbox.id, references);
  const from = message.from[0]!;
  return {
    to,
    cc,
    bcc,
    subject: message.subject,
    bodyText: message.text ?? (message.html === null ? '' : null),
    bodyHtml: message.html,
    attachmentIds: stored.attachmentIds,
    parent: parent
      ? { id: parent.id, threadId: parent.threadId, internetMessageId: parent.internetMessageId, references }
      : null,
    internetMessageId: cleanMessageIds([message.messageId])[0] ?? null,
    rawBlobKey: stored.rawKey,
    rawSizeBytes: stored.rawSizeBytes,
    fromAddress: from.address,
    fromDisplayName: from.name,
  };
}

/** The distinct envelope recipients (RCPT TO), normalized: who receives a submitted message. */
export const envelopeRecipients = (envelope: { rcptTo: readonly string[] }): string[] =>
  [...new Set(envelope.rcptTo.map(normalizeAddress))].filter(isAddress);

/**
 * Parsed attachments as staged uploads of the mailbox, which SendService.submit then claims in
 * its transaction like HTTP uploads. The caller deletes them if the submission fails.
 */
export async function stageAttachments(
  db: Database,
  mailboxId: string,
  files: readonly AttachmentFile[],
): Promise<string[]> {
  if (files.length === 0) return [];
  const at = new Date();
  return db.tx(async (trx) => {
    const ids: string[] = [];
    for (const f of files) ids.push(await insertAttachment(trx, { ...f, mailboxId, messageId: null, at }));
    return ids;
  });
}
