import type { MessageDetail } from '../types';

/** What the compose form writes: a new message, a reply (to the sender or to all), a forward. */
export type ComposeMode = 'new' | 'reply' | 'replyAll' | 'forward';

/** The original as a reply quotes it: an attribution line, then each line after `> `. */
export function quote(m: MessageDetail): string {
  const who = m.fromDisplayName ? `${m.fromDisplayName} <${m.fromAddress}>` : m.fromAddress;
  const text = (m.bodyText ?? '').replace(/\s+$/, '');
  return `On ${new Date(m.createdAtTs).toLocaleString()}, ${who} wrote:\n${text
    .split(/\r?\n/)
    .map((l) => (l.startsWith('>') ? `>${l}` : `> ${l}`))
    .join('\n')}`;
}

/** The prefixes mail clients stack (the server removes the same ones, docs/workflow.md "Replies"). */
const PREFIX = /^\s*(re|aw|sv|antw|vs|fwd?|wg)(\[\d+\])?\s*:\s*/i;
const base = (subject: string): string => {
  let s = subject;
  while (PREFIX.test(s)) s = s.replace(PREFIX, '');
  return s.trim();
};

/** The subject each mode starts with: the server's own default, so sending it unchanged changes nothing. */
export function subjectFor(mode: ComposeMode, m: MessageDetail): string {
  if (mode === 'forward') return `Fwd: ${base(m.subject)}`;
  return `Re: ${base(m.subject)}`;
}

const lower = (a: string) => a.toLowerCase();

/** To of a reply: the sender of received mail (the server prefers its Reply-To), the To of one's own. */
export const replyTo = (m: MessageDetail): string[] => (m.direction === 'outbound' ? m.toAddresses : [m.fromAddress]);

/**
 * The Cc a reply-all adds, as the server computes it (docs/workflow.md, "Reply-all"): the original's
 * To and Cc (of one's own mail: its Cc), without this mailbox's address, without anyone already in
 * To, each once. The server also leaves out the mailbox's aliases and sender identities, which the
 * console does not know: the sent message shows the final list.
 */
export function replyAllCc(m: MessageDetail): string[] {
  const skip = new Set([lower(m.mailboxAddress), ...replyTo(m).map(lower)]);
  const out: string[] = [];
  for (const a of m.direction === 'outbound' ? m.ccAddresses : [...m.toAddresses, ...m.ccAddresses]) {
    if (skip.has(lower(a))) continue;
    skip.add(lower(a));
    out.push(a);
  }
  return out;
}

/** The form's fields for a mode, from the original. */
export function prefill(mode: ComposeMode, m: MessageDetail): { to: string; subject: string; body: string } {
  if (mode === 'forward') return { to: '', subject: subjectFor(mode, m), body: '' };
  return { to: replyTo(m).join(', '), subject: subjectFor(mode, m), body: `\n\n${quote(m)}` };
}
