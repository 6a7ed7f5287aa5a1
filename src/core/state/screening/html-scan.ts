import { Parser } from 'htmlparser2';
import { registrableDomain } from './domains.js';

/** What one pass over an HTML body finds: its text, the part a reader cannot see, its deceptive links. */
export interface HtmlScan {
  /** All text, visible and hidden (a model reads both). */
  text: string;
  /** Non-blank text inside elements hidden by CSS, size, colour or the hidden attribute. */
  hiddenText: string;
  /** Links whose text names one domain and whose target is another. */
  mismatchedLinks: number;
}

const MAX_HTML_CHARS = 300_000;

// CSS that hides an element's text from a reader (docs/screening.md, "hiddenText").
const HIDING_STYLE =
  /(^|;)\s*(display\s*:\s*none|visibility\s*:\s*hidden|opacity\s*:\s*0(\.0+)?\s*(;|$|!)|font-size\s*:\s*(0|0?\.\d+|1)(px|pt|em|rem|%)?\s*(;|$|!)|(left|top|text-indent)\s*:\s*-\d{3,}(px|em))/i;
const COLLAPSED = /(^|;)\s*(max-)?height\s*:\s*0(px)?\s*(;|$|!)/i;
const OVERFLOW_HIDDEN = /overflow\s*:\s*hidden/i;
const WHITE = /^\s*(#fff|#ffffff|white|rgb\(\s*255\s*,\s*255\s*,\s*255\s*\)|#fefefe|#fdfdfd)\s*$/i;
const VOID = new Set([
  'br',
  'img',
  'hr',
  'input',
  'meta',
  'link',
  'area',
  'base',
  'col',
  'embed',
  'source',
  'track',
  'wbr',
]);
// Text made only of spaces and invisible padding (a preheader's &zwnj;&nbsp; runs, U+034F) is not text.
const BLANK = /^(?:\s|\u200B|\u200C|\u200D|\u2060|\uFEFF|\u00A0|\u034F|\u00AD)*$/u;
const SKIPPED = new Set(['style', 'script', 'head', 'title']);
const DOMAIN_IN_TEXT = /\b((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24})\b/i;

interface Frame {
  tag: string;
  hidden: boolean;
  skipped: boolean;
  /** The background this element's text is drawn on (null: the client's, white). */
  background: string | null;
}

function cssValue(style: string, name: string): string | null {
  const m = new RegExp(`(?:^|;)\\s*${name}\\s*:\\s*([^;!]+)`, 'i').exec(style);
  return m ? m[1]!.trim() : null;
}

function backgroundOf(attrs: Record<string, string>, style: string): string | null {
  const fromStyle = cssValue(style, 'background-color') ?? cssValue(style, 'background');
  return fromStyle ?? attrs['bgcolor'] ?? null;
}

function hides(attrs: Record<string, string>, style: string, background: string | null): boolean {
  if ('hidden' in attrs || HIDING_STYLE.test(style)) return true;
  if (COLLAPSED.test(style) && OVERFLOW_HIDDEN.test(style)) return true;
  const color = cssValue(style, 'color') ?? attrs['color'] ?? null;
  return color !== null && WHITE.test(color) && (background === null || WHITE.test(background));
}

/** Parses `html` once (htmlparser2, tolerant of broken mail markup) and collects what screening needs. */
export function scanHtml(html: string): HtmlScan {
  const stack: Frame[] = [{ tag: '#root', hidden: false, skipped: false, background: null }];
  const text: string[] = [];
  const hidden: string[] = [];
  let mismatchedLinks = 0;
  let link: { href: string; text: string } | null = null;
  const top = () => stack[stack.length - 1]!;
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        const parent = top();
        const style = attrs['style'] ?? '';
        const background = backgroundOf(attrs, style) ?? parent.background;
        const frame: Frame = {
          tag: name,
          hidden: parent.hidden || hides(attrs, style, background),
          skipped: parent.skipped || SKIPPED.has(name),
          background,
        };
        if (name === 'a' && attrs['href']) link = { href: attrs['href'], text: '' };
        if (!VOID.has(name)) stack.push(frame);
      },
      ontext(data) {
        const frame = top();
        if (frame.skipped) return;
        text.push(data);
        if (frame.hidden && BLANK.test(data) === false) hidden.push(data);
        if (link) link.text += data;
      },
      onclosetag(name) {
        if (name === 'a' && link) {
          if (linkMisleads(link.text, link.href)) mismatchedLinks++;
          link = null;
        }
        if (VOID.has(name)) return;
        // Pop to the matching element; a stray close tag closes nothing.
        const at = stack.findLastIndex((f) => f.tag === name);
        if (at > 0) stack.length = at;
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html.slice(0, MAX_HTML_CHARS));
  parser.end();
  return { text: text.join(' '), hiddenText: hidden.join(' ').trim(), mismatchedLinks };
}

/** The link's text shows a domain, its target is an http(s) URL of another registrable domain. */
function linkMisleads(label: string, href: string): boolean {
  const shown = DOMAIN_IN_TEXT.exec(label.trim())?.[1];
  if (!shown || !/^https?:\/\//i.test(href.trim())) return false;
  const shownDomain = registrableDomain(shown);
  let target: string;
  try {
    target = new URL(href.trim()).hostname;
  } catch {
    return false;
  }
  const targetDomain = registrableDomain(target);
  return shownDomain !== null && targetDomain !== null && shownDomain !== targetDomain;
}
