import { AppError } from './errors.js';

/**
 * Text PostgreSQL can store: no U+0000 (`text` and `jsonb` cannot hold it) and no unpaired UTF-16
 * surrogate (a `\ud800` escape in JSON; `jsonb` refuses it, and event payloads are `jsonb`).
 * Either would fail the query (a 500, or a 451 retry loop over SMTP) instead of being refused.
 * HTTP and MCP check every parsed input with `assertStorableText` (400 TEXT_INVALID naming the
 * field); text parsed out of received mail is cleaned with `storableText` instead, since the raw
 * message keeps the bytes anyway.
 */
export function assertStorableText(value: unknown, where: string): void {
  const found = findUnstorable(value, []);
  if (!found) return;
  const field = found.path.length ? found.path.join('.') : where;
  throw new AppError(
    'TEXT_INVALID',
    `${field}: ${found.nul ? 'must not contain NUL characters' : 'must be well-formed Unicode (no unpaired surrogates)'}`,
  );
}

const problemOf = (s: string): { nul: boolean } | null =>
  s.includes('\u0000') ? { nul: true } : s.isWellFormed() ? null : { nul: false };

function findUnstorable(value: unknown, path: (string | number)[]): { path: (string | number)[]; nul: boolean } | null {
  if (typeof value === 'string') {
    const p = problemOf(value);
    return p ? { path, ...p } : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findUnstorable(value[i], [...path, i]);
      if (hit) return hit;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const keyProblem = problemOf(k);
      const hit = keyProblem ? { path: [...path, k], ...keyProblem } : findUnstorable(v, [...path, k]);
      if (hit) return hit;
    }
  }
  return null;
}

/** The text without NULs and with unpaired surrogates replaced by U+FFFD (for values parsed out of received mail). */
export const storableText = (s: string): string =>
  (s.includes('\u0000') ? s.replaceAll('\u0000', '') : s).toWellFormed();
