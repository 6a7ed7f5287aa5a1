import type { MessageDetail } from '../types';
import { replyAllCc, type ComposeMode } from './compose-prefill';

export const split = (text: string) =>
  text
    .split(/[,;\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * Above the form: what is answered or forwarded; below To and Cc: who the message goes to, with
 * the Cc a reply-all adds by itself and, for a forward, the original's attachments that go along.
 */
export function ComposeContext(props: { mode: ComposeMode; parent: MessageDetail | null }) {
  const { mode, parent } = props;
  if (!parent || mode === 'new') return null;
  const what = mode === 'forward' ? 'Forwarding' : mode === 'replyAll' ? 'Replying to all on' : 'Replying to';
  return (
    <p class="hint">
      {what} {parent.fromAddress}: “{parent.subject || '(no subject)'}”.{' '}
      {mode === 'forward'
        ? 'The original follows your note, under a "Forwarded message" block (From, Date, Subject, To, Cc).'
        : 'Write above the quoted original.'}
    </p>
  );
}

export function GoesTo(props: { mode: ComposeMode; parent: MessageDetail | null; to: string; cc: string }) {
  const { mode, parent } = props;
  const auto = mode === 'replyAll' && parent ? replyAllCc(parent) : [];
  const to = split(props.to);
  const cc = [...auto, ...split(props.cc).filter((a) => !auto.some((x) => x.toLowerCase() === a.toLowerCase()))];
  return (
    <div class="goes-to" aria-label="Goes to" role="group">
      <p>
        <strong>Goes to:</strong> {to.length ? to.join(', ') : '(no recipient yet)'}
        {cc.length > 0 && (
          <>
            {' '}
            <strong>Cc:</strong> {cc.join(', ')}
          </>
        )}
      </p>
      {mode === 'replyAll' && (
        <p class="hint">
          Reply all copies everyone the original was addressed to
          {auto.length ? ` (${auto.join(', ')})` : ' (nobody else here)'}; add more under Cc. The server leaves out this
          mailbox’s own addresses and aliases.
        </p>
      )}
      {mode === 'forward' && parent && parent.attachments.length > 0 && (
        <p class="hint" aria-label="Attachments that go along">
          With the original’s attachments: {parent.attachments.map((a) => a.filename || 'attachment').join(', ')}
        </p>
      )}
    </div>
  );
}
