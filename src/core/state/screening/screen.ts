import { scanHtml } from './html-scan.js';
import { instructionSignals } from './instructions.js';
import { senderSignals, type SenderContext } from './domains.js';
import { SCREENING_SIGNALS, type Screening, type ScreeningSignal } from './screening.schemas.js';
import { unicodeSignals, withoutInvisible } from './unicode.js';
import { SIGNAL_WEIGHTS } from './weights.js';

/** What screening reads of an inbound message. */
export interface ScreenedMessage {
  from: string;
  fromDisplayName?: string | null;
  subject: string;
  bodyText: string | null;
  bodyHtml: string | null;
}

/** Characters of a text body read at most: bounds the CPU of one message whatever its size. */
const MAX_TEXT_CHARS = 300_000;

/** Combines signals as independent evidence: 1 − Π(1 − weight), rounded to 3 places. */
export function scoreOf(signals: readonly ScreeningSignal[]): number {
  const clear = signals.reduce((p, s) => p * (1 - SIGNAL_WEIGHTS[s]), 1);
  return Math.round((1 - clear) * 1000) / 1000;
}

/**
 * The screening of one inbound message (docs/screening.md): a pure function of the message and
 * what the mailbox knows of its correspondents, so every intake path computes the same.
 */
export function screenMessage(m: ScreenedMessage, context: SenderContext): Screening {
  const html = m.bodyHtml ? scanHtml(m.bodyHtml) : null;
  const raw = [m.fromDisplayName ?? '', m.subject, (m.bodyText ?? '').slice(0, MAX_TEXT_CHARS), html?.text ?? ''].join(
    '\n',
  );
  const found = new Set<ScreeningSignal>([
    ...unicodeSignals(raw),
    ...instructionSignals(withoutInvisible(raw)),
    ...senderSignals(m.from, context),
  ]);
  if (html && html.hiddenText.length > 0) found.add('hiddenText');
  if (html && html.mismatchedLinks > 0) found.add('linkMismatch');
  // Listed in the catalog's order, so equal findings always read the same.
  const signals = SCREENING_SIGNALS.filter((s) => found.has(s));
  return { score: scoreOf(signals), signals };
}
