/** A link of a message and what it is for (docs/api.md, "Extraction"). */
export interface ExtractedLink {
  url: string;
  kind: 'verification' | 'unsubscribe' | 'other';
}

const UNSUBSCRIBE =
  /unsubscribe|opt[-_ ]?out|abmelden|abbestellen|d[ée]sabonner|d[ée]sinscri|desuscrib|darse de baja|cancelar (la )?suscripci|disiscriviti|afmelden|uitschrijven|отписаться|配信停止|退订|取消订阅|수신거부|email[-_ ]?preferences|manage (your )?(e-?mail )?(preferences|subscriptions)/i;
const VERIFICATION =
  /verif|confirm|activat|magic[-_ ]?link|sign[-_ ]?in|log[-_ ]?in|auth|token=|reset|validat|bestätig|aktivier|valider|confirmar|conferma|bevestig|doğrula|подтверд|確認|验证|인증/i;

const MAX_LINKS = 50;
const MAX_URL_CHARS = 2048;

const decodeEntities = (s: string) =>
  s
    .replace(/&amp;/gi, '&')
    .replace(/&#x([0-9a-f]+);/gi, (_, h: string) => String.fromCodePoint(parseInt(h, 16)))
    .replace(/&#(\d+);/g, (_, d: string) => String.fromCodePoint(Number(d)))
    .replace(/&quot;/gi, '"')
    .replace(/&lt;/gi, '<')
    .replace(/&gt;/gi, '>');

const stripTags = (s: string) =>
  decodeEntities(s.replace(/<[^>]*>/g, ' '))
    .replace(/\s+/g, ' ')
    .trim();

/** http(s) only, trimmed of the punctuation that ends a sentence around a plain-text URL. */
function clean(url: string): string | null {
  const u = decodeEntities(url.trim()).replace(/[.,;:!?)\]}>'"]+$/, '');
  if (!/^https?:\/\/[^\s/]+/i.test(u) || u.length > MAX_URL_CHARS) return null;
  return u;
}

function classify(url: string, label: string): ExtractedLink['kind'] {
  const text = `${url} ${label}`;
  if (UNSUBSCRIBE.test(text)) return 'unsubscribe';
  if (VERIFICATION.test(text)) return 'verification';
  return 'other';
}

/**
 * The links of a message in order of appearance, de-duplicated: List-Unsubscribe (RFC 2369,
 * RFC 8058) first, then the anchors of the HTML body (their text helps classify), then URLs of
 * the text body. Images and stylesheets are not links.
 */
export function findLinks(bodyText: string | null, bodyHtml: string | null, listUnsubscribe: readonly string[]) {
  const out: ExtractedLink[] = [];
  const seen = new Set<string>();
  const add = (raw: string, kind: ExtractedLink['kind']) => {
    const url = raw.startsWith('mailto:') ? raw.slice(0, MAX_URL_CHARS) : clean(raw);
    if (!url || seen.has(url) || out.length >= MAX_LINKS) return;
    seen.add(url);
    out.push({ url, kind });
  };
  for (const u of listUnsubscribe) add(u, 'unsubscribe');
  if (bodyHtml) {
    for (const m of bodyHtml.matchAll(
      /<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))[^>]*>([\s\S]*?)<\/a>/gi,
    )) {
      const href = m[1] ?? m[2] ?? m[3] ?? '';
      const url = clean(href);
      if (url) add(url, classify(url, stripTags(m[4] ?? '')));
    }
  }
  if (bodyText) {
    for (const m of bodyText.matchAll(/https?:\/\/[^\s<>"'`]+/gi)) {
      const url = clean(m[0]);
      if (!url) continue;
      // The words just before a plain-text URL are its label ("Confirm your address: https://…").
      const label = bodyText.slice(Math.max(0, m.index - 60), m.index);
      add(url, classify(url, label.split(/\n\s*\n/).pop() ?? ''));
    }
  }
  return out;
}

/** The URLs of a List-Unsubscribe header value: `<https://…>, <mailto:…>` (RFC 2369 §3.2). */
export function listUnsubscribeUrls(value: string | null | undefined): string[] {
  if (!value) return [];
  return [...value.matchAll(/<\s*([^>\s]+)\s*>/g)]
    .map((m) => m[1]!)
    .filter((u) => /^(https?:\/\/|mailto:)/i.test(u))
    .slice(0, 5);
}
