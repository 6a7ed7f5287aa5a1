import { findOneTimeCodes } from './one-time-codes.js';
import { findLinks, type ExtractedLink } from './links.js';
import { htmlToText } from './html-text.js';
import { replyTextOf } from './reply-text.js';

/** What the detail shows as `extracted` (docs/contract.md, Agent-native reading). */
export interface Extracted {
  codes: string[];
  links: ExtractedLink[];
  replyText: string;
}

export interface ExtractionSource {
  subject: string;
  bodyText: string | null;
  bodyHtml: string | null;
  /** URLs of the List-Unsubscribe header (listUnsubscribeUrls). */
  listUnsubscribe?: readonly string[] | undefined;
}

/** Text looked at for codes and the reply: enough for any real notification or reply. */
const MAX_TEXT_CHARS = 200_000;

/** The text codes and the reply are looked for in: the text body, else the HTML body as text. */
const textOf = (bodyText: string | null, bodyHtml: string | null): string =>
  (bodyText ?? (bodyHtml ? htmlToText(bodyHtml) : '')).slice(0, MAX_TEXT_CHARS);

/** What intake stores: codes and links, which waits query in SQL (extracted -> 'codes'). */
export type IngestExtracted = Omit<Extracted, 'replyText'>;

/**
 * What is extracted at ingest and stored with the message: codes and links (waits for a code
 * read them in SQL the moment the message commits). The reply text (email-reply-parser: 1.4 of
 * the 1.8 ms this cost per 10 KB message on port 25, bench/smtp --cpu-prof) is found after the
 * commit by the worker (ReplyTextBackfill), and by a read that comes first (replyTextOfBodies).
 */
export function extractAtIngest(m: ExtractionSource): IngestExtracted {
  return {
    codes: findOneTimeCodes(m.subject, textOf(m.bodyText, m.bodyHtml)),
    links: findLinks(m.bodyText, m.bodyHtml, m.listUnsubscribe ?? []),
  };
}

/** The reply text of a message's bodies (the same text extraction looks at). */
export const replyTextOfBodies = (bodyText: string | null, bodyHtml: string | null): string =>
  replyTextOf(textOf(bodyText, bodyHtml));

/** Everything, at once (what a message's detail shows). */
export function extractMessage(m: ExtractionSource): Extracted {
  return { ...extractAtIngest(m), replyText: replyTextOfBodies(m.bodyText, m.bodyHtml) };
}

export const EMPTY_EXTRACTED: Extracted = { codes: [], links: [], replyText: '' };
