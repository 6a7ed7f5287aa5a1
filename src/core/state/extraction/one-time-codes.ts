/**
 * One-time codes in a message (docs/api.md, "Extraction"). A candidate is a run of 4–8 digits
 * (optionally split once or twice by a space or dash: "123 456", "123-456"), a 4–12 character
 * upper-case token mixing letters and digits ("A7K-9QX", "G-123456"), or 5–8 upper-case letters
 * written right after a code word ("code: XKQPTR"). It counts only next to a code word in one of
 * the languages below and away from the words that mark order numbers, amounts, phone numbers,
 * dates and the like. Codes are returned as typed into a form: separators removed.
 */

/**
 * Code words (case-insensitive) in English, German, French, Spanish, Portuguese, Italian, Dutch,
 * Polish, Turkish, Swedish, Russian, Chinese, Japanese and Korean. Strong ones name a code and
 * count within the whole window; weak ones (verify, sign in, password…) only right before it.
 */
const STRONG_WORD = new RegExp(
  [
    '(?<!\\p{L})code(?!\\p{L})',
    '(?<!\\p{L})codes(?!\\p{L})',
    '(?<!\\p{L})otp(?!\\p{L})',
    'passcode',
    'one[- ]time',
    '(?<!\\p{L})pin(?!\\p{L})',
    '2fa',
    'bestätigungscode',
    'sicherheitscode',
    'einmalcode',
    'código',
    'codice',
    'verificatiecode',
    '(?<!\\p{L})kod(?!\\p{L})',
    'kodu',
    'verifieringskod',
    'engångskod',
    'код',
    '验证码',
    '驗證碼',
    '校验码',
    'コード',
    '인증번호',
    '인증 ?코드',
  ].join('|'),
  'iu',
);
const WEAK_WORD =
  /verif|confirm|log[- ]?in|sign[- ]?in|password|authenticat|security|two[- ]factor|bestätig|anmelde|vérification|sécurité|connexion|verificación|verificação|verifica|weryfik|doğrulama|подтвержд|認証|인증/iu;
const WEAK_WINDOW = 40;

/** Words that make a nearby number something else: orders, money, phones, references, sizes. */
const NOT_A_CODE_BEFORE =
  /(order|bestell|commande|pedido|ordine|invoice|rechnung|facture|factura|fattura|receipt|quittung|tracking|sendung|shipment|ref|reference|referenz|référence|ticket|case|account|konto|compte|customer|kunden|member|booking|buchung|reservation|réservation|flight|flug|departure|arrival|abflug|ankunft|phone|tel|telefon|téléphone|call|fax|mobile|extension|iban|zip|postal|plz|total|amount|betrag|montant|price|preis|prix|balance|item|artikel|sku|serial|version|room|zimmer|suite|discount|coupon|promo|voucher|gutschein|rabatt|conference id|meeting id|[#№$€£¥]|no\.|nr\.|n°|©|\(c\)|copyright)(?:[ \t]+(?:confirmation|bestätigung|reference|ref\.?|number|nummer|numéro|número|no\.?|nr\.?|id|code|ending(?: in)?|is|ist|est))?[ \t:.#-]*$/iu;
const NOT_A_CODE_AFTER =
  /^\s*(minutes?|mins?\b|seconds?|secs?\b|hours?|stunden|minuten|heures|horas|minutos|days?|tage|jours|%|px|km|kg|mb|gb|usd|eur|gbp|€|\$|£|kr\b|[.,]\d)/iu;

const NUMERIC =
  /(?<![\p{L}\p{N}@#$€£¥+/.,_-])(\d{4,8}|\d{3}[ -]\d{3}|\d{4}[ -]\d{4}|\d{2}[ -]\d{2}[ -]\d{2})(?![\p{L}\p{N}/_@-])/gu;
// The look-behind comes after the first character, not before it: a pattern that opens with a
// character class lets V8 skip to the candidates, where one opening with a Unicode look-behind
// tests every position (a 10 KB body: 54 -> 16 µs; the same matches, test/unit/code-patterns.test.ts).
export const ALNUM = /([A-Z0-9](?<![\p{L}\p{N}@#/._-][A-Z0-9])[A-Z0-9]*(?:-[A-Z0-9]{2,})?)(?![\p{L}\p{N}/_@-])/gu;
const LETTERS_AFTER_WORD =
  /(?:code|código|codice|kod|код)\s*(?:is|ist|est|es|è|é|:|：|-)?\s*:?\s*([A-Z]{5,8})(?![\p{L}\p{N}])/gu;

const BEFORE_WINDOW = 100;
const AFTER_WINDOW = 60;
const MAX_CODES = 5;

interface Candidate {
  code: string;
  index: number;
  length: number;
  /** Already proven by its pattern (a letters-only code right after a code word). */
  strong: boolean;
}

function candidates(text: string): Candidate[] {
  const out: Candidate[] = [];
  for (const m of text.matchAll(NUMERIC)) out.push({ code: m[1]!, index: m.index, length: m[0].length, strong: false });
  for (const m of text.matchAll(ALNUM)) {
    const raw = m[1]!;
    const compact = raw.replace(/-/g, '');
    if (compact.length < 4 || compact.length > 12 || !/\d/.test(compact) || !/[A-Z]/.test(compact)) continue;
    // Google-style "G-123456": the digits are what the form takes.
    const google = /^[A-Z]-(\d{4,8})$/.exec(raw);
    out.push({ code: google ? google[1]! : raw, index: m.index, length: raw.length, strong: false });
  }
  for (const m of text.matchAll(LETTERS_AFTER_WORD)) {
    const at = m.index + m[0].length - m[1]!.length;
    out.push({ code: m[1]!, index: at, length: m[1]!.length, strong: true });
  }
  return out.sort((a, b) => a.index - b.index);
}

const isYear = (code: string) => /^(19|20)\d\d$/.test(code);

function accepted(text: string, c: Candidate, subjectHasWord: boolean): boolean {
  const before = text.slice(Math.max(0, c.index - BEFORE_WINDOW), c.index);
  const after = text.slice(c.index + c.length, c.index + c.length + AFTER_WINDOW);
  if (NOT_A_CODE_BEFORE.test(before.slice(-30)) || NOT_A_CODE_AFTER.test(after)) return false;
  // Part of a longer run of digit groups: a phone number or an IBAN, not a code.
  if (/\d[ -]$/.test(before) || /^[ -]\d/.test(after)) return false;
  if (c.strong) return true;
  if (isYear(c.code)) return STRONG_WORD.test(before.slice(-25));
  if (STRONG_WORD.test(before) || STRONG_WORD.test(after) || WEAK_WORD.test(before.slice(-WEAK_WINDOW))) return true;
  // A code standing alone on its own line, in a mail whose subject names a code.
  const lineStart = text.lastIndexOf('\n', c.index - 1) + 1;
  const lineEnd = text.indexOf('\n', c.index + c.length);
  const line = text.slice(lineStart, lineEnd === -1 ? undefined : lineEnd).trim();
  return subjectHasWord && line === text.slice(c.index, c.index + c.length);
}

/** The one-time codes of a message, first seen first (subject, then body), at most five. */
export function findOneTimeCodes(subject: string, bodyText: string): string[] {
  const subjectHasWord = STRONG_WORD.test(subject) || WEAK_WORD.test(subject);
  const found: string[] = [];
  for (const text of [subject, bodyText]) {
    // URLs and e-mail addresses carry digits that are never codes.
    const clean = withoutAddresses(text.replace(/\b(?:https?:\/\/|www\.)\S+/gi, ' '));
    for (const c of candidates(clean)) {
      if (!accepted(clean, c, subjectHasWord)) continue;
      const code = c.code.replace(/[ -]/g, '');
      if (!found.includes(code)) found.push(code);
      if (found.length >= MAX_CODES) return found;
    }
  }
  return found;
}

const WHITESPACE = /\s/;
const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13) || (c > 127 && WHITESPACE.test(String.fromCharCode(c)));
const ADDRESS_WORD = /^\S+@\S+\.\S+$/;

/**
 * `text` with every whitespace-delimited word shaped like an address (\S+@\S+\.\S+) replaced by
 * a space: what `text.replace(/(?<!\S)\S+@\S+\.\S+/g, ' ')` gives, found from each '@' outwards
 * instead of by a pattern tried at every position (a 10 KB body without '@': 74 -> 0.3 µs; with
 * 60 addresses: 81 -> 12 µs).
 */
export function withoutAddresses(text: string): string {
  let out = '';
  let from = 0;
  for (let at = text.indexOf('@'); at !== -1;) {
    let start = at;
    while (start > 0 && !isSpace(text.charCodeAt(start - 1))) start--;
    let end = at + 1;
    while (end < text.length && !isSpace(text.charCodeAt(end))) end++;
    if (ADDRESS_WORD.test(text.slice(start, end))) {
      out += `${text.slice(from, start)} `;
      from = end;
    }
    at = text.indexOf('@', end);
  }
  return from === 0 ? text : out + text.slice(from);
}
