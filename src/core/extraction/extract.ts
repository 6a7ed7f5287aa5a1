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

/**
 * Everything extracted from a message at ingest, stored with it so reading costs nothing. The
 * text body is used when there is one; an HTML-only message is converted to text first.
 */
export function extractMessage(m: ExtractionSource): Extracted {
  const text = (m.bodyText ?? (m.bodyHtml ? htmlToText(m.bodyHtml) : '')).slice(0, MAX_TEXT_CHARS);
  return {
    codes: findOneTimeCodes(m.subject, text),
    links: findLinks(m.bodyText, m.bodyHtml, m.listUnsubscribe ?? []),
    replyText: replyTextOf(text),
  };
}

export const EMPTY_EXTRACTED: Extracted = { codes: [], links: [], replyText: '' };
