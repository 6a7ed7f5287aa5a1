import { domainToUnicode } from 'node:url';
import { LRUCache } from 'lru-cache';
import { getDomain } from 'tldts';
import type { ScreeningSignal } from './screening.schemas.js';

/**
 * Domains whose look-alikes phishing uses most; a mailbox's own contacts are compared too.
 * Compared by registrable domain (tldts, the Public Suffix List), so mail.github.com is github.com.
 */
export const WELL_KNOWN_DOMAINS: readonly string[] = [
  'paypal.com',
  'google.com',
  'gmail.com',
  'microsoft.com',
  'outlook.com',
  'apple.com',
  'icloud.com',
  'amazon.com',
  'github.com',
  'gitlab.com',
  'facebook.com',
  'instagram.com',
  'whatsapp.com',
  'linkedin.com',
  'netflix.com',
  'dropbox.com',
  'docusign.com',
  'stripe.com',
  'slack.com',
  'zoom.us',
  'adobe.com',
  'okta.com',
  'chase.com',
  'wellsfargo.com',
  'bankofamerica.com',
  'coinbase.com',
  'binance.com',
  'openai.com',
  'anthropic.com',
  'atlassian.com',
  'salesforce.com',
  'shopify.com',
  'ebay.com',
  'twitter.com',
  'discord.com',
  'fedex.com',
  'dhl.com',
  'ups.com',
  'usps.com',
  'intuit.com',
  'notion.so',
  'cloudflare.com',
  'heroku.com',
];

// A mailbox's contacts come back with every message it receives: their domains are parsed once.
const registrable = new LRUCache<string, { domain: string | null }>({ max: 20_000 });

/** The registrable domain (eTLD+1) of a host, lower-cased; null for an IP, a bare suffix or junk. */
export function registrableDomain(host: string): string | null {
  const key = host.toLowerCase().replace(/\.$/, '');
  const cached = registrable.get(key);
  if (cached) return cached.domain;
  const domain = getDomain(key, { allowPrivateDomains: false }) ?? null;
  registrable.set(key, { domain });
  return domain;
}

// Characters drawn like Latin letters (a small part of Unicode's confusables.txt: the ones seen
// in phishing domains), and digit or letter pairs that read as one letter.
const CONFUSABLE: Record<string, string> = {
  а: 'a',
  е: 'e',
  о: 'o',
  р: 'p',
  с: 'c',
  у: 'y',
  х: 'x',
  і: 'i',
  ј: 'j',
  ԁ: 'd',
  ѕ: 's',
  ԛ: 'q',
  ԝ: 'w',
  һ: 'h',
  ο: 'o',
  α: 'a',
  ν: 'v',
  ρ: 'p',
  τ: 't',
  ι: 'i',
  κ: 'k',
  ı: 'i',
  ɡ: 'g',
  ł: 'l',
  '0': 'o',
  '1': 'l',
  '3': 'e',
  '4': 'a',
  '5': 's',
  '7': 't',
  '8': 'b',
  '9': 'g',
  '|': 'l',
};

/** A label as a reader sees it: accents dropped, look-alike characters folded, rn→m, vv→w, i→l. */
export function skeleton(label: string): string {
  const folded = [...label.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase()]
    .map((c) => CONFUSABLE[c] ?? c)
    .join('');
  return folded.replace(/rn/g, 'm').replace(/vv/g, 'w').replace(/cl/g, 'd').replace(/i/g, 'l').replace(/-/g, '');
}

/** Optimal-string-alignment distance (one transposition is one edit), bounded: `max + 1` means farther. */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2]! + 1);
      row.push(d);
    }
    prev2 = prev;
    prev = row;
  }
  return prev[b.length]!;
}

/** A domain to compare with: its registrable domain, the label before the suffix, that label's skeleton. */
interface KnownName {
  domain: string;
  label: string;
  skeleton: string;
}

/** A registrable domain is one label and a public suffix, so its label is the first one. */
function knownName(domain: string): KnownName {
  const label = domain.split('.')[0] ?? domain;
  return { domain, label, skeleton: skeleton(label) };
}

const WELL_KNOWN = WELL_KNOWN_DOMAINS.map(knownName);

/** A name of the sender (its label, or a hyphen-separated part of it) and its skeleton, folded once. */
interface SenderName {
  name: string;
  skeleton: string;
}

/** Whether one name of the sender reads as `known`'s label. */
function readsAs(n: SenderName, known: KnownName): boolean {
  if (n.name === known.label) return true;
  if (known.label.length < 4) return false;
  if (n.skeleton === known.skeleton) return true;
  if (known.label.length >= 6 && editDistance(n.name, known.label, 1) <= 1) return true;
  return known.label.length >= 9 && editDistance(n.skeleton, known.skeleton, 2) <= 2;
}

/** Whether the sender (host, its registrable domain) imitates `known` without being it. */
function imitates(senderHost: string, sender: string, names: readonly SenderName[], known: KnownName): boolean {
  if (sender === known.domain) return false;
  const [label, ...parts] = names;
  // The same name under another suffix (amazon.de, amazon.co.uk) is the brand's own, as often as not.
  if (!label || label.name === known.label) return false;
  if (known.label.length >= 4 && readsAs(label, known)) return true;
  // paypal-secure.com, secure-paypa1.net, dhl-parcel-notice.example
  if (parts.some((part) => readsAs(part, known))) return true;
  // paypal.com.evil.example
  return senderHost.startsWith(`${known.domain}.`) || senderHost.includes(`.${known.domain}.`);
}

export interface SenderContext {
  /** The mailbox's own domain: mail from it is never new. */
  ownDomain: string | null;
  /** Registrable domains of the mailbox's contacts (empty: nothing known yet). */
  knownDomains: readonly string[];
}

/** The sender-domain signals of a From address. */
export function senderSignals(fromAddress: string, context: SenderContext): ScreeningSignal[] {
  const at = fromAddress.lastIndexOf('@');
  if (at < 0) return [];
  const asciiHost = fromAddress.slice(at + 1).toLowerCase();
  const found: ScreeningSignal[] = [];
  const punycode = asciiHost.split('.').some((l) => l.startsWith('xn--'));
  const host = punycode ? domainToUnicode(asciiHost) || asciiHost : asciiHost;
  if (punycode || /[^ -~]/.test(host)) found.push('punycodeDomain');
  const sender = registrableDomain(host) ?? host;
  const own = context.ownDomain ? (registrableDomain(context.ownDomain) ?? context.ownDomain) : null;
  if (sender === own) return found;
  const known = new Set([...context.knownDomains, ...(own ? [own] : [])]);
  // A correspondent already known, or a brand itself, imitates nothing: a look-alike that wrote
  // first (and so became a contact) must not make the real domain look like its copy.
  if (known.has(sender) || WELL_KNOWN_DOMAINS.includes(sender)) return found;
  const candidates = [...WELL_KNOWN, ...[...known].filter((d) => !WELL_KNOWN_DOMAINS.includes(d)).map(knownName)];
  const label = sender.split('.')[0] ?? sender;
  const parts = label.includes('-') ? label.split('-').filter((p) => p.length >= 3) : [];
  const names = [label, ...parts].map((name) => ({ name, skeleton: skeleton(name) }));
  for (const k of candidates)
    if (imitates(host, sender, names, k)) {
      found.push('lookalikeDomain');
      break;
    }
  found.push('newSenderDomain');
  return found;
}
