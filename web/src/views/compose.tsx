import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam } from '../session';
import { go } from '../router';
import type { MessageDetail } from '../types';

const split = (text: string) =>
  text
    .split(/[,;\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);

/** The original as a reply quotes it: an attribution line, then each line after `> `. */
export function quote(m: MessageDetail): string {
  const who = m.fromDisplayName ? `${m.fromDisplayName} <${m.fromAddress}>` : m.fromAddress;
  const text = (m.bodyText ?? '').replace(/\s+$/, '');
  return `On ${new Date(m.createdAtTs).toLocaleString()}, ${who} wrote:\n${text
    .split(/\r?\n/)
    .map((l) => (l.startsWith('>') ? `>${l}` : `> ${l}`))
    .join('\n')}`;
}

/**
 * New message or reply. Attachments are uploaded first (POST /api/messages/attachments), then
 * named by id; the send carries an Idempotency-Key so a double click or a retry sends once.
 */
export function Compose(props: { replyTo?: string }) {
  const [parent, setParent] = useState<MessageDetail | null>(null);
  const [to, setTo] = useState('');
  const [cc, setCc] = useState('');
  const [subject, setSubject] = useState('');
  const [body, setBody] = useState('');
  const [files, setFiles] = useState<File[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [idempotencyKey] = useState(() => crypto.randomUUID());

  useEffect(() => {
    if (!props.replyTo) return;
    api<MessageDetail>('GET', `/api/messages/${encodeURIComponent(props.replyTo)}`, { query: mailboxParam() }).then(
      (m) => {
        setParent(m);
        setSubject(/^re:/i.test(m.subject) ? m.subject : `Re: ${m.subject}`);
        // To: the sender of received mail, the recipients of one's own; the original quoted below.
        setTo((m.direction === 'outbound' ? m.toAddresses : [m.fromAddress]).join(', '));
        setBody(`\n\n${quote(m)}`);
      },
      (err) => setError(errorText(err)),
    );
  }, [props.replyTo]);

  const send = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const attachmentIds: string[] = [];
      for (const file of files) {
        const form = new FormData();
        const mailbox = mailboxParam().mailboxAddress;
        if (mailbox) form.append('mailboxAddress', mailbox);
        form.append('file', file, file.name);
        attachmentIds.push(
          (await api<{ attachmentUploadId: string }>('POST', '/api/messages/attachments', { body: form }))
            .attachmentUploadId,
        );
      }
      const common = { bodyText: body, ccAddresses: split(cc), attachmentIds, ...mailboxParam() };
      const headers = { 'Idempotency-Key': idempotencyKey };
      const sent = props.replyTo
        ? await api<{ messageId: string }>('POST', `/api/messages/${encodeURIComponent(props.replyTo)}/reply`, {
            body: { ...common, subject, ...(to.trim() ? { toAddress: split(to) } : {}) },
            headers,
          })
        : await api<{ messageId: string }>('POST', '/api/messages/send', {
            body: { ...common, subject, toAddress: split(to) },
            headers,
          });
      go('message', sent.messageId);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="compose" onSubmit={send} aria-label={props.replyTo ? 'Reply' : 'New message'}>
      <h1>{props.replyTo ? 'Reply' : 'New message'}</h1>
      {parent && (
        <p class="hint">
          Replying to {parent.fromAddress}: “{parent.subject}”. Write above the quoted original.
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <label>
        To
        <input name="to" required={!props.replyTo} value={to} onInput={(e) => setTo(e.currentTarget.value)} />
      </label>
      <label>
        Cc
        <input name="cc" value={cc} onInput={(e) => setCc(e.currentTarget.value)} />
      </label>
      <label>
        Subject
        <input name="subject" value={subject} onInput={(e) => setSubject(e.currentTarget.value)} />
      </label>
      <label>
        Message
        <textarea name="body" rows={12} required value={body} onInput={(e) => setBody(e.currentTarget.value)} />
      </label>
      <label>
        Attachments
        <input name="attachments" type="file" multiple onChange={(e) => setFiles([...(e.currentTarget.files ?? [])])} />
      </label>
      <div class="toolbar">
        <button type="submit" disabled={busy}>
          {busy ? 'Sending…' : 'Send'}
        </button>
        <a href="#/inbox">Cancel</a>
      </div>
    </form>
  );
}
