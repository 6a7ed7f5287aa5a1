import { AppError } from '../../base/errors.js';
import { DIRECTIONS, type Direction } from '../messages/message.schemas.js';

/**
 * The search grammar (docs/api.md, "Search"): words and "quoted phrases" match subject and body;
 * operators narrow. Every part must hold (AND). Values may be quoted: subject:"weekly report".
 */
export interface SearchQuery {
  /** Single words (each must occur) and phrases (words adjacent, in order). */
  terms: { text: string; phrase: boolean }[];
  /** Lower-cased; each must be a substring of the From address or display name. */
  from: string[];
  /** Lower-cased; each must be a substring of a To or Cc address. */
  to: string[];
  /** Words or phrases that must occur in the subject. */
  subject: { text: string; phrase: boolean }[];
  hasAttachment: boolean;
  isRead: boolean | null;
  /** created_at < before (UTC midnight of the day given: that day excluded). */
  before: Date | null;
  /** created_at >= after (UTC midnight of the day given: that day included). */
  after: Date | null;
  direction: Direction | null;
}

export const SEARCH_OPERATORS = ['from', 'to', 'subject', 'has', 'is', 'before', 'after', 'direction'] as const;
const MAX_QUERY_CHARS = 500;
const MAX_PARTS = 32;

const invalid = (detail: string) => new AppError('SEARCH_QUERY_INVALID', detail);

/** A word counts only if it has a letter or digit: punctuation alone matches nothing in the index. */
const hasWordChar = (s: string) => /[\p{L}\p{N}]/u.test(s);

/**
 * Splits `q` into tokens: `name:value`, `name:"quoted value"`, `"a phrase"` or a bare word.
 * An opening quote without its closing quote is a 400, so a typo never silently changes the meaning.
 */
function tokenize(q: string): { op: string | null; value: string; quoted: boolean }[] {
  const out: { op: string | null; value: string; quoted: boolean }[] = [];
  const re = /\s*(?:([A-Za-z]+):)?(?:"([^"]*)("?)|(\S+))/gy;
  let m: RegExpExecArray | null;
  while (re.lastIndex < q.length && (m = re.exec(q)) !== null) {
    if (m[0].trim() === '') break;
    const [, op, quoted, closing, bare] = m;
    if (quoted !== undefined && closing !== '"') throw invalid('A quoted phrase is not closed: add the closing ".');
    out.push({ op: op ? op.toLowerCase() : null, value: quoted ?? bare ?? '', quoted: quoted !== undefined });
  }
  return out;
}

function day(op: string, value: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const [y, mo, d] = m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [0, 0, 0];
  const date = new Date(Date.UTC(y, mo - 1, d));
  // Date.UTC rolls 2026-02-30 over to March: a round trip that changes the day means no such day.
  if (!m || date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d)
    throw invalid(`${op}: needs a date as YYYY-MM-DD, got "${value}".`);
  return date;
}

/** Parses a search string; every malformed part is a 400 SEARCH_QUERY_INVALID naming it. */
export function parseSearchQuery(q: string): SearchQuery {
  const text = q.trim();
  if (text.length === 0) throw invalid('q is empty: give words or operators such as from:, subject:, is:unread.');
  if (text.length > MAX_QUERY_CHARS) throw invalid(`q is longer than ${MAX_QUERY_CHARS} characters.`);
  const out: SearchQuery = {
    terms: [],
    from: [],
    to: [],
    subject: [],
    hasAttachment: false,
    isRead: null,
    before: null,
    after: null,
    direction: null,
  };
  const tokens = tokenize(text);
  if (tokens.length > MAX_PARTS) throw invalid(`q has more than ${MAX_PARTS} parts.`);
  for (const token of tokens) {
    // "from:" followed by a space is an operator missing its value, not a word.
    const bareOp = token.op === null && !token.quoted ? /^([A-Za-z]+):$/.exec(token.value) : null;
    const { op, value, quoted } = bareOp ? { op: bareOp[1]!.toLowerCase(), value: '', quoted: false } : token;
    // A URL or a time ("https://…", "10:30") is a word, not an operator.
    if (op === null || (!quoted && value.startsWith('//'))) {
      const word = op === null ? value : `${op}:${value}`;
      if (hasWordChar(word)) out.terms.push({ text: word, phrase: quoted });
      continue;
    }
    if (!(SEARCH_OPERATORS as readonly string[]).includes(op))
      throw invalid(`Unknown operator "${op}:". Known: ${SEARCH_OPERATORS.map((o) => `${o}:`).join(', ')}.`);
    if (value.trim() === '') throw invalid(`${op}: needs a value.`);
    const v = value.trim();
    switch (op) {
      case 'from':
        out.from.push(v.toLowerCase());
        break;
      case 'to':
        out.to.push(v.toLowerCase());
        break;
      case 'subject':
        if (!hasWordChar(v)) throw invalid('subject: needs a word with a letter or digit.');
        out.subject.push({ text: v, phrase: quoted });
        break;
      case 'has':
        if (v.toLowerCase() !== 'attachment') throw invalid(`has: accepts only "attachment", got "${v}".`);
        out.hasAttachment = true;
        break;
      case 'is': {
        const s = v.toLowerCase();
        if (s !== 'read' && s !== 'unread') throw invalid(`is: accepts "read" or "unread", got "${v}".`);
        const wanted = s === 'read';
        if (out.isRead !== null && out.isRead !== wanted) throw invalid('is:read and is:unread cannot both hold.');
        out.isRead = wanted;
        break;
      }
      case 'before':
        out.before = day(op, v);
        break;
      case 'after':
        out.after = day(op, v);
        break;
      case 'direction': {
        const d = v.toLowerCase() as Direction;
        if (!DIRECTIONS.includes(d)) throw invalid(`direction: accepts "inbound" or "outbound", got "${v}".`);
        out.direction = d;
        break;
      }
    }
  }
  const any =
    out.terms.length + out.from.length + out.to.length + out.subject.length > 0 ||
    out.hasAttachment ||
    out.isRead !== null ||
    out.before !== null ||
    out.after !== null ||
    out.direction !== null;
  if (!any) throw invalid('q has no word with a letter or digit and no operator.');
  return out;
}

/** A stable text of the parsed query, so a cursor is bound to what was searched, not how it was typed. */
export function canonicalQuery(s: SearchQuery): string {
  return JSON.stringify(s);
}
