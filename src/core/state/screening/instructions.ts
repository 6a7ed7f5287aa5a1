import type { ScreeningSignal } from './screening.schemas.js';

// Phrases written for a model, not for a person: overriding its instructions, naming it, or
// speaking in a chat template's role markers. Case-insensitive, over the text with invisible
// characters removed (unicode.ts), so a split word still matches.
const ASSISTANT_INSTRUCTIONS: readonly RegExp[] = [
  /\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,30}\b(previous|prior|above|earlier|preceding|all|any|your|the)\b[^.\n]{0,20}\b(instructions?|prompts?|directives?|rules|guidelines|context)\b/i,
  /\byou are (now )?(an? )?(ai|a\.i\.|artificial intelligence|assistant|language model|llm|chat ?bot|ai agent|autonomous agent)\b/i,
  /\b(system|developer) (prompt|message|instructions?)\b/i,
  /\b(note|message|instructions?|attention|hey|hi|dear)\b[^.\n]{0,12}\b(to |for )?(the |any |all )?(ai|assistant|llm|language model|ai agent|email agent|copilot|chat ?bot)s?\b[:,]/i,
  /\bas an? (ai|assistant|language model|llm|ai agent|email agent)\b/i,
  /(<\|?\s*(im_start|im_end|system|assistant)\s*\|?>|\[\s*\/?\s*(system|inst|sys)\s*\]|\{\{\s*system)/i,
  /\bnew (instructions|task|directive)s?\s*:/i,
  /\b(do not|don't|never|without)\s+(tell(ing)?|inform(ing)?|notify(ing)?|mention(ing)?|alert(ing)?|ask(ing)?)\s+(the |your )?(user|human|owner|operator)\b/i,
  /\b(use|call|invoke|run)\s+(the\s+)?(send_mail|reply_message|get_verification_code|list_messages|search_messages|tool|function)\b/i,
  /\bforward (all|every|each|the last \d+|the (entire|whole))\b[^.\n]{0,40}\b(e-?mails?|messages?|mail|inbox|conversations?|codes?)\b/i,
  /\b(reveal|print|output|repeat|show)\b[^.\n]{0,20}\b(your|the)\b[^.\n]{0,10}\b(instructions|system prompt|prompt|configuration)\b/i,
];

// A request to hand over a secret. A verification mail names its code too, but tells the reader
// to type it, not to send it, and usually says never to share it (the negation below).
const CREDENTIAL_REQUESTS: readonly RegExp[] = [
  /\b(send|reply|respond|(e-?mail|text) (me|us)|share|provide|give|tell|forward|submit|confirm|verify|paste|type out|read out)\b[^.\n]{0,40}\b(your|the|ur|this|that|these|those)\b[^.\n]{0,25}\b(passwords?|passcodes?|pass codes?|pins?|otps?|one[- ]time (pass)?codes?|verification codes?|security codes?|2fa( codes?)?|mfa( codes?)?|auth(entication)? codes?|login codes?|sign-?in codes?|api[- _]?keys?|access tokens?|auth tokens?|bearer tokens?|tokens?|secret keys?|private keys?|credentials|recovery (codes?|phrase)|seed phrase|login details|bank details|card (number|details))\b/i,
  /\b(what is|what's|need|require)\b[^.\n]{0,15}\b(your)\b[^.\n]{0,15}\b(password|passcode|api[- _]?key|access token|otp|one[- ]time code|verification code|seed phrase)\b/i,
];
const NEGATION = /\b(never|not|don't|do not|won't|will not|no one|nobody|nor|cannot|can't)\b[^.\n]*$/i;

/** Whether `re` matches somewhere in `text` without a negation earlier in the same sentence. */
function affirmed(re: RegExp, text: string): boolean {
  const global = new RegExp(re.source, re.flags.includes('g') ? re.flags : `${re.flags}g`);
  for (const m of text.matchAll(global)) {
    const before = text.slice(Math.max(0, m.index - 60), m.index);
    const sentence = before.split(/[.!?\n]/).pop() ?? '';
    if (!NEGATION.test(sentence)) return true;
  }
  return false;
}

/** The instruction and credential-request signals of `text`. */
export function instructionSignals(text: string): ScreeningSignal[] {
  const found: ScreeningSignal[] = [];
  if (ASSISTANT_INSTRUCTIONS.some((re) => re.test(text))) found.push('assistantInstruction');
  if (CREDENTIAL_REQUESTS.some((re) => affirmed(re, text))) found.push('credentialRequest');
  return found;
}
