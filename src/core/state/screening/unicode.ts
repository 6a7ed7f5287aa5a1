import type { ScreeningSignal } from './screening.schemas.js';

// Zero-width and word-joiner characters: padding in a newsletter preheader, but between two
// letters they split a word so a filter (or a reader) misses it, or carry hidden bits.
const ZERO_WIDTH = /[\u200B-\u200D\u2060-\u2064\uFEFF\u180E\u00AD]/u;
const ZERO_WIDTH_IN_WORD = /[\p{L}\p{N}][\u200B-\u200D\u2060-\u2064\uFEFF\u180E\u00AD]+[\p{L}\p{N}]/u;
// Unicode tag characters (U+E0000 block) render as nothing and spell ASCII a model still reads.
const TAG_CHARACTERS = /[\u{E0000}-\u{E007F}]/u;
// Bidi embeddings, overrides and isolates reorder what is shown against what is stored.
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/u;

/** The invisible-character signals of `text` (subject, bodies, display name). */
export function unicodeSignals(text: string): ScreeningSignal[] {
  const found: ScreeningSignal[] = [];
  if (ZERO_WIDTH.test(text) && ZERO_WIDTH_IN_WORD.test(text)) found.push('invisibleUnicode');
  if (TAG_CHARACTERS.test(text)) found.push('tagCharacters');
  if (BIDI_CONTROLS.test(text)) found.push('bidiOverride');
  return found;
}

/** `text` with the invisible characters removed, so a word split by them still matches a pattern. */
export const withoutInvisible = (text: string): string =>
  text.replace(/[\u200B-\u200D\u2060-\u2064\uFEFF\u180E\u00AD\u202A-\u202E\u2066-\u2069]/gu, '').replace(
    /[\u{E0020}-\u{E007E}]/gu,
    // A tag character spells the ASCII character 0xE0000 below it.
    (c) => String.fromCodePoint(c.codePointAt(0)! - 0xe0000),
  );
