import type { Readable } from 'node:stream';
import {
  MailParser,
  type AddressObject,
  type AttachmentStream,
  type EmailAddress,
  type HeaderValue,
  type MessageText,
} from 'mailparser';
import { asMimeError, MimeCapCounter, SPLITTER_LIMITS, type SplitChunk } from './mime-caps.js';
import { storableText } from '../../base/text.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import { isAddress, normalizeAddress } from '../../base/address.js';
import type { AttachmentFile } from '../attachments/attachment.store.js';
import { sanitizeContentType, sanitizeFilename } from '../attachments/attachment-meta.js';
import { MAX_BODY_CHARS, MAX_SUBJECT_CHARS } from './body-caps.js';
import type { BlobStore } from '../../../storage/blobs/blob-store.js';
import { listUnsubscribeUrls } from '../extraction/links.js';

export { MIME_LIMITS } from './mime-caps.js';

export interface MailAddress {
  address: string;
  name: string;
}

/** What the core needs from a message: envelope-independent header facts, bodies, attachments. */
export interface ParsedMessage {
  subject: string;
  /** Every From mailbox; RFC 5322 §3.6.2 allows several. Unparsable addresses are left out. */
  from: MailAddress[];
  to: string[];
  cc: string[];
  /** Reply-To addresses (RFC 5322 §3.6.2): where replies go instead of From. */
  replyTo: string[];
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  date: Date | null;
  /** Capped at MAX_BODY_CHARS; the raw message keeps everything. */
  text: string | null;
  html: string | null;
  /** Already in the blob store (`att/…`); the caller deletes them if it does not keep the message. */
  attachments: AttachmentFile[];
  /** The top-level header fields as received (`key` lower-case, `line` the whole unfolded-or-not field). */
  headerLines: { key: string; line: string }[];
  /** URLs of the List-Unsubscribe header (RFC 2369), for link extraction. */
  listUnsubscribe: string[];
}

const Base = MailParser as unknown as new (
  options: object,
) => MailParser & { processChunk(data: SplitChunk, done: (err?: Error) => void): void };

/**
 * MailParser under MIME_LIMITS: mailsplit caps node count and one node's header size itself; the
 * MimeCapCounter checks depth and all header bytes before mailparser decodes a node's headers.
 */
class CappedParser extends Base {
  private readonly caps = new MimeCapCounter();

  override processChunk(data: SplitChunk, done: (err?: Error) => void): void {
    if (data.type === 'node') {
      const violation = this.caps.violation(data);
      if (violation) return done(violation);
    }
    super.processChunk(data, done);
  }
}

/**
 * Parses a message with mailparser under MIME_LIMITS, streaming each attachment into the blob
 * store as it is decoded, so memory stays bounded by the text parts (which the message size caps).
 * The source is always read to its end, even after a failure, so a channel feeding it never stalls.
 */
export async function parseMime(source: Readable | Buffer, blobs: BlobStore): Promise<ParsedMessage> {
  const parser = new CappedParser({
    skipHtmlToText: true,
    skipTextToHtml: true,
    skipTextLinks: true,
    skipImageLinks: true,
    ...SPLITTER_LIMITS,
  });
  // In MIME order: each attachment takes its slot when the parser reaches it, not when its blob is written.
  const attachments: (AttachmentFile | null)[] = [];
  const pending: Promise<unknown>[] = [];
  let headers: Map<string, HeaderValue> = new Map();
  let headerLines: { key: string; line: string }[] = [];
  let body: MessageText | null = null;
  let listUnsubscribe: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      let failed = false;
      const fail = (err: unknown) => {
        if (failed) return;
        failed = true;
        if (!Buffer.isBuffer(source)) {
          source.unpipe(parser);
          source.resume(); // keep draining: the sender is still talking
        }
        reject(err);
      };
      if (!Buffer.isBuffer(source)) source.on('error', fail);
      parser.on('error', fail);
      parser.on('headers', (h: Map<string, HeaderValue>) => {
        headers = h;
      });
      parser.on('headerLines', (lines: { key: string; line: string }[]) => {
        headerLines = lines;
        // mailparser keeps one URL of List-Unsubscribe; the raw line keeps them all.
        const line = lines.find((l) => l.key === 'list-unsubscribe')?.line;
        if (line) listUnsubscribe = listUnsubscribeUrls(line.slice(line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' '));
      });
      parser.on('data', (data: AttachmentStream | MessageText) => {
        if (data.type === 'text') body = data;
        else pending.push(storeAttachment(blobs, data, attachments).catch(fail));
      });
      parser.once('end', () => resolve());
      if (Buffer.isBuffer(source)) parser.end(source);
      else source.pipe(parser);
    });
    await Promise.all(pending);
  } catch (err) {
    await Promise.all(pending.map((p) => p.catch(() => undefined)));
    await Promise.all(attachments.map((a) => a && blobs.delete(a.blobKey).catch(() => undefined)));
    throw asMimeError(err);
  }
  return {
    ...toParsed(
      headers,
      body,
      attachments.filter((a): a is AttachmentFile => a !== null),
    ),
    headerLines,
    listUnsubscribe,
  };
}

const UNNAMED: Record<string, string> = { 'message/rfc822': 'message.eml', 'text/calendar': 'invite.ics' };

async function storeAttachment(
  blobs: BlobStore,
  data: AttachmentStream,
  into: (AttachmentFile | null)[],
): Promise<void> {
  const slot = into.push(null) - 1;
  const blobKey = `att/${newId(ID_PREFIX.attachment)}`;
  try {
    const stored = await blobs.put(blobKey, data.content as Readable);
    // A part without a name gets one clients open: a forwarded message, a calendar invitation.
    const filename = data.filename ?? UNNAMED[data.contentType];
    into[slot] = {
      filename: sanitizeFilename(filename),
      contentType: sanitizeContentType(data.contentType),
      sizeBytes: stored.sizeBytes,
      sha256: stored.sha256,
      blobKey,
      contentId: contentIdOf(data.contentId),
      disposition: data.contentDisposition === 'inline' ? 'inline' : 'attachment',
    };
  } finally {
    data.release();
  }
}

/** A Content-ID as `cid:` URLs name it (RFC 2392): without angle brackets, or null when absent or unusable. */
function contentIdOf(raw: string | undefined): string | null {
  const id = (raw ?? '').trim().replace(/^<|>$/g, '').trim();
  return id && id.length <= 255 && !/[\s<>]/.test(id) ? storableText(id) : null;
}

function toParsed(
  headers: Map<string, HeaderValue>,
  body: MessageText | null,
  attachments: AttachmentFile[],
): Omit<ParsedMessage, 'headerLines' | 'listUnsubscribe'> {
  // NULs and unpaired surrogates leave every parsed field (PostgreSQL cannot store them, see core/text.ts);
  // the raw message keeps the bytes.
  const html = typeof body?.html === 'string' ? storableText(body.html.slice(0, MAX_BODY_CHARS)) : null;
  // mailparser reports an empty text beside HTML when there is no text/plain part at all.
  const text =
    typeof body?.text === 'string' && !(body.text === '' && html !== null)
      ? storableText(body.text.slice(0, MAX_BODY_CHARS))
      : null;
  const subject = typeof headers.get('subject') === 'string' ? (headers.get('subject') as string) : '';
  const date = headers.get('date');
  return {
    // Cut first, then cleaned: a cut through a surrogate pair leaves a half that jsonb (event payloads) refuses.
    subject: storableText(
      subject
        .replace(/[\r\n]+/g, ' ')
        .trim()
        .slice(0, MAX_SUBJECT_CHARS),
    ),
    from: mailboxes(headers.get('from')),
    to: mailboxes(headers.get('to')).map((a) => a.address),
    cc: mailboxes(headers.get('cc')).map((a) => a.address),
    replyTo: mailboxes(headers.get('reply-to')).map((a) => a.address),
    messageId: firstString(headers.get('message-id')),
    inReplyTo: firstString(headers.get('in-reply-to')),
    references: stringList(headers.get('references')),
    date: date instanceof Date && !Number.isNaN(date.getTime()) ? date : null,
    text,
    html,
    attachments,
  };
}

/** The mailboxes of an address header, groups flattened, invalid addresses dropped. */
function mailboxes(value: HeaderValue | undefined): MailAddress[] {
  const objects = (Array.isArray(value) ? value : [value]) as (AddressObject | undefined)[];
  const out: MailAddress[] = [];
  const visit = (list: EmailAddress[]) => {
    for (const a of list) {
      if (a.group) visit(a.group);
      const address = normalizeAddress(a.address ?? '');
      if (isAddress(address) && !out.some((o) => o.address === address))
        out.push({ address, name: storableText((a.name ?? '').slice(0, 200)) });
    }
  };
  for (const o of objects) if (o && typeof o === 'object' && 'value' in o && Array.isArray(o.value)) visit(o.value);
  return out;
}

const firstString = (v: HeaderValue | undefined): string | null =>
  typeof v === 'string'
    ? storableText(v).trim()
    : Array.isArray(v) && typeof v[0] === 'string'
      ? storableText(v[0]).trim()
      : null;
const stringList = (v: HeaderValue | undefined): string[] =>
  (typeof v === 'string' ? v.split(/\s+/) : Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [])
    .map((s) => storableText(s).trim())
    .filter(Boolean);

/**
 * In-Reply-To and References exactly as `parseMime` reads them, from the header section alone (the
 * body is not read): what a decision before the whole parse needs of a reply (queued submission).
 */
export async function replyHeaders(
  raw: Buffer,
  blobs: BlobStore,
): Promise<Pick<ParsedMessage, 'inReplyTo' | 'references'>> {
  const end = raw.indexOf('\r\n\r\n');
  const parsed = await parseMime(Buffer.concat([raw.subarray(0, end === -1 ? raw.length : end), CRLF_CRLF]), blobs);
  return { inReplyTo: parsed.inReplyTo, references: parsed.references };
}

const CRLF_CRLF = Buffer.from('\r\n\r\n');
