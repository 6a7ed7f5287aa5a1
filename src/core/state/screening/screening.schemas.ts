import { z } from 'zod';

/** What inbound screening may find in a message (docs/screening.md, "Signals"). */
export const SCREENING_SIGNALS = [
  'hiddenText',
  'invisibleUnicode',
  'tagCharacters',
  'bidiOverride',
  'assistantInstruction',
  'credentialRequest',
  'lookalikeDomain',
  'punycodeDomain',
  'newSenderDomain',
  'linkMismatch',
] as const;
export type ScreeningSignal = (typeof SCREENING_SIGNALS)[number];

/** A message's screening as stored and shown: score 0..1, the names of what was found. */
export const screeningSchema = z.object({
  score: z.number().min(0).max(1),
  signals: z.array(z.enum(SCREENING_SIGNALS)),
});
export type Screening = z.infer<typeof screeningSchema>;

/** The wire shape on every read: the stored screening and whether the mail is held. */
export const screeningViewSchema = screeningSchema.extend({
  /** True while the mailbox policy's holdAtScore keeps it out of agent reads (until released). */
  held: z.boolean(),
});
export type ScreeningView = z.infer<typeof screeningViewSchema>;

/** Mail stored before screening existed, and outbound mail. */
export const UNSCREENED: Screening = { score: 0, signals: [] };
