import { checkTokenFormat } from '../../access/token-format.js';

/** The kinds of secret the outbound check recognises (docs/screening.md, "Secrets in outbound mail"). */
export type SecretKind =
  'mailboxServiceToken' | 'privateKey' | 'awsAccessKey' | 'githubToken' | 'slackToken' | 'apiKeyAssignment';

// Each pattern is a credential's published shape; the token one is confirmed by its checksum.
const PATTERNS: readonly { kind: SecretKind; re: RegExp }[] = [
  { kind: 'privateKey', re: /-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----/ },
  { kind: 'awsAccessKey', re: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b/ },
  { kind: 'githubToken', re: /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b/ },
  {
    kind: 'slackToken',
    re: /\b(?:xox[abposr]-[A-Za-z0-9-]{10,}|hooks\.slack\.com\/services\/T[A-Z0-9]+\/B[A-Z0-9]+\/[A-Za-z0-9]{16,})/,
  },
];
const OUR_TOKEN = /\bmbx[md]_[0-9A-Za-z]{38}\b/g;
// `api_key = "…"`, `"secret": "…"`, `password: …`: a value of 20+ key characters after a secret's name.
const ASSIGNMENT =
  /(?<![a-z0-9])(?:api[_-]?key|api[_-]?secret|secret[_-]?key|client[_-]?secret|access[_-]?key|auth[_-]?token|access[_-]?token|private[_-]?key|password|passwd|token|secret)["']?\s*[:=]\s*["']?([A-Za-z0-9_\-+/=.]{20,200})/gi;
/** Bits per character above which an assigned value is a random key rather than a word or a path. */
const MIN_ENTROPY = 3.5;
const MAX_SCAN_CHARS = 1_000_000;

/** Shannon entropy of `s` in bits per character. */
function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) h -= (n / s.length) * Math.log2(n / s.length);
  return h;
}

/** The first kind of secret in a subject or body, or null: a send carrying one is held for approval. */
export function secretIn(parts: readonly (string | null | undefined)[]): SecretKind | null {
  const text = parts
    .filter((p): p is string => typeof p === 'string')
    .join('\n')
    .slice(0, MAX_SCAN_CHARS);
  for (const m of text.matchAll(OUR_TOKEN)) if (checkTokenFormat(m[0]) !== null) return 'mailboxServiceToken';
  for (const { kind, re } of PATTERNS) if (re.test(text)) return kind;
  for (const m of text.matchAll(ASSIGNMENT)) if (entropy(m[1]!) >= MIN_ENTROPY) return 'apiKeyAssignment';
  return null;
}
