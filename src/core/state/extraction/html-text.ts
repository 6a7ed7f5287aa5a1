import { convert } from 'html-to-text';

/** Characters of HTML converted at most (MAX_BODY_CHARS caps bodies already; this bounds the CPU of one conversion). */
const MAX_HTML_CHARS = 500_000;

/**
 * Readable text of an HTML body or document: block structure kept as line breaks, links and
 * images left out (links are extracted separately), no word wrapping.
 */
export function htmlToText(html: string): string {
  return convert(html.slice(0, MAX_HTML_CHARS), {
    wordwrap: false,
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'head', format: 'skip' },
      // Mail layouts are tables: each cell is its own block, so a code in its own cell stands on its own line.
      { selector: 'table', format: 'block' },
      { selector: 'tr', format: 'block' },
      { selector: 'td', format: 'block' },
      { selector: 'th', format: 'block' },
    ],
  });
}
