import type { ScreeningSignal } from './screening.schemas.js';

/**
 * How much each signal alone says that a mail is hostile, as a probability; signals combine as
 * independent evidence (score = 1 − Π(1 − weight)). Chosen so that no single weak signal (a
 * newsletter's hidden preheader, a first mail from a new domain, a tracking link) reaches the
 * default threshold, while any strong one (instructions aimed at an assistant, tag characters)
 * does, and two medium ones together do (docs/screening.md, "Method").
 */
export const SIGNAL_WEIGHTS: Readonly<Record<ScreeningSignal, number>> = {
  assistantInstruction: 0.7,
  tagCharacters: 0.6,
  lookalikeDomain: 0.55,
  credentialRequest: 0.45,
  bidiOverride: 0.45,
  linkMismatch: 0.35,
  hiddenText: 0.3,
  invisibleUnicode: 0.3,
  punycodeDomain: 0.25,
  newSenderDomain: 0.1,
};

/** The score at which the corpus is measured and the value docs/screening.md suggests for holdAtScore. */
export const DEFAULT_HOLD_THRESHOLD = 0.5;
