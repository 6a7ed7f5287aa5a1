/**
 * The loop guard's reading of a message header (RFC 3834 §2, §3.1.1; RFC 2919 List-Id; RFC 5321
 * §4.5.5 null reverse-path): why a message must not be answered automatically, or null. An agent
 * replying to a vacation notice, a bounce or a mailing list is how mail loops start.
 */
export function automationOf(headerText: string): string | null {
  const fields = unfold(headerText);
  const value = (name: string) =>
    fields
      .find((f) => f.name === name)
      ?.value.trim()
      .toLowerCase();
  const autoSubmitted = value('auto-submitted')?.split(';')[0]?.trim();
  if (autoSubmitted === 'auto-replied' || autoSubmitted === 'auto-notified') return `Auto-Submitted: ${autoSubmitted}`;
  const precedence = value('precedence');
  if (precedence === 'bulk' || precedence === 'junk' || precedence === 'list') return `Precedence: ${precedence}`;
  if (value('list-id') !== undefined) return 'List-Id';
  const returnPath = value('return-path');
  if (returnPath !== undefined && /^<\s*>$/.test(returnPath)) return 'empty return path';
  // A delivery status notification (RFC 3464) is the classic null-sender message.
  if (value('content-type')?.startsWith('multipart/report')) return 'delivery report';
  return null;
}

/** The header section of a raw message (up to the first empty line). */
export function headerSection(raw: Buffer, maxBytes = 256 * 1024): string {
  const head = raw.subarray(0, maxBytes);
  const end = head.indexOf('\r\n\r\n');
  const endLf = head.indexOf('\n\n');
  const cut = [end, endLf].filter((i) => i >= 0);
  return head.subarray(0, cut.length ? Math.min(...cut) : head.length).toString('latin1');
}

function unfold(text: string): { name: string; value: string }[] {
  return text
    .split(/\r?\n(?![ \t])/)
    .map((line) => {
      const colon = line.indexOf(':');
      return colon <= 0
        ? null
        : {
            name: line.slice(0, colon).trim().toLowerCase(),
            value: line.slice(colon + 1).replace(/\r?\n[ \t]+/g, ' '),
          };
    })
    .filter((f): f is { name: string; value: string } => f !== null);
}

/** The header HTTP and MCP mail carries while the guard is on (RFC 3834 §5). */
export const AUTO_SUBMITTED_GENERATED = 'auto-generated';
