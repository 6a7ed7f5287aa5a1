import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam } from '../session';
import { go } from '../router';
import { features } from '../features';
import type { Attachment, Draft, MessageDetail } from '../types';

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

/** The console's compose form, as a draft's fields (POST /api/drafts, PATCH /api/drafts/{draftId}). */
interface DraftFields {
  toAddress: string[];
  ccAddresses: string[];
  subject: string;
  bodyText: string;
  attachmentIds: string[];
  parentMessageId?: string;
}

/**
 * New message, reply, or a saved draft (#/draft/{draftId}, filled from GET /api/drafts/{draftId}).
 * Attachments are uploaded first (POST /api/messages/attachments), then named by id. Save draft
 * keeps the form as a draft (created, then changed); Send of a draft saves it and sends it through
 * POST /api/drafts/{draftId}/send, which removes it once accepted. Sends carry an Idempotency-Key,
 * so a double click or a retry sends once.
 */
export function Compose(props: { replyTo?: string; draftId?: string }) {
  const [parent, setParent] = useState<MessageDetail | null>(null);
  const [draftId, setDraftId] = useState<string | null>(props.draftId ?? null);
  const [parentId, setParentId] = useState<string | null>(props.replyTo ?? null);
  const [to, setTo] = useState('');
  const [cc, setCc] = useState('');
  const [subject, setSubject] = useState('');
  const [body, setBody] = useState('');
  const [files, setFiles] = useState<File[]>([]);
  const [held, setHeld] = useState<Attachment[]>([]);
  const [busy, setBusy] = useState<'send' | 'save' | 'delete' | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
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

  useEffect(() => {
    if (!props.draftId) return;
    setDraftId(props.draftId);
    api<Draft>('GET', `/api/drafts/${encodeURIComponent(props.draftId)}`, { query: mailboxParam() }).then(
      (d) => {
        setTo(d.toAddress.join(', '));
        setCc(d.ccAddresses.join(', '));
        setSubject(d.subject ?? '');
        setBody(d.bodyText ?? '');
        setHeld(d.attachments);
        setParentId(d.parentMessageId);
        if (d.parentMessageId)
          api<MessageDetail>('GET', `/api/messages/${encodeURIComponent(d.parentMessageId)}`, {
            query: mailboxParam(),
          }).then(setParent, () => setParent(null));
      },
      (err) => setError(errorText(err)),
    );
  }, [props.draftId]);

  /** Uploads the files chosen since the last save; their ids, after the ones the draft holds. */
  const uploadFiles = async (): Promise<string[]> => {
    const ids = held.map((a) => a.attachmentId);
    for (const file of files) {
      const form = new FormData();
      const mailbox = mailboxParam().mailboxAddress;
      if (mailbox) form.append('mailboxAddress', mailbox);
      form.append('file', file, file.name);
      ids.push(
        (await api<{ attachmentUploadId: string }>('POST', '/api/messages/attachments', { body: form }))
          .attachmentUploadId,
      );
    }
    return ids;
  };

  /** Creates the draft, or changes the one open; answers its id and what it holds now. */
  const save = async (): Promise<string> => {
    const fields: DraftFields = {
      toAddress: split(to),
      ccAddresses: split(cc),
      subject,
      bodyText: body,
      attachmentIds: await uploadFiles(),
      ...(parentId && !draftId ? { parentMessageId: parentId } : {}),
    };
    const saved = draftId
      ? await api<Draft>('PATCH', `/api/drafts/${encodeURIComponent(draftId)}`, {
          body: { ...fields, ...mailboxParam() },
        })
      : await api<Draft>('POST', '/api/drafts', { body: { ...fields, ...mailboxParam() } });
    setFiles([]);
    setHeld(saved.attachments);
    setDraftId(saved.draftId);
    return saved.draftId;
  };

  const run = async (what: 'send' | 'save' | 'delete', step: () => Promise<void>) => {
    setBusy(what);
    setError(null);
    setNotice(null);
    try {
      await step();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(null);
    }
  };

  const send = (e: Event) => {
    e.preventDefault();
    void run('send', async () => {
      const headers = { 'Idempotency-Key': idempotencyKey };
      if (draftId) {
        const id = await save();
        const sent = await api<{ messageId: string }>('POST', `/api/drafts/${encodeURIComponent(id)}/send`, {
          body: mailboxParam(),
          headers,
        });
        go('message', sent.messageId);
        return;
      }
      const common = { bodyText: body, ccAddresses: split(cc), attachmentIds: await uploadFiles(), ...mailboxParam() };
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
    });
  };

  const saveDraft = () =>
    void run('save', async () => {
      const id = await save();
      setNotice('Draft saved.');
      if (props.draftId !== id) go('draft', id);
    });

  const deleteDraft = () => {
    if (!draftId || !confirm('Delete this draft?')) return;
    void run('delete', async () => {
      await api('DELETE', `/api/drafts/${encodeURIComponent(draftId)}`, { query: mailboxParam() });
      go('drafts');
    });
  };

  const title = draftId ? 'Draft' : props.replyTo ? 'Reply' : 'New message';
  return (
    <form class="compose" onSubmit={send} aria-label={title}>
      <h1>{title}</h1>
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
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <label>
        To
        <input name="to" required={!parentId} value={to} onInput={(e) => setTo(e.currentTarget.value)} />
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
      {held.length > 0 && (
        <ul class="attachments" aria-label="Attached">
          {held.map((a) => (
            <li key={a.attachmentId}>
              {a.filename}{' '}
              <button
                type="button"
                class="link"
                aria-label={`Remove ${a.filename}`}
                onClick={() => setHeld(held.filter((h) => h.attachmentId !== a.attachmentId))}
              >
                remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <label>
        Attachments
        <input name="attachments" type="file" multiple onChange={(e) => setFiles([...(e.currentTarget.files ?? [])])} />
      </label>
      <div class="toolbar">
        <button type="submit" disabled={busy !== null}>
          {busy === 'send' ? 'Sending…' : 'Send'}
        </button>
        {features.value.drafts && (
          <button type="button" disabled={busy !== null} onClick={saveDraft}>
            {busy === 'save' ? 'Saving…' : 'Save draft'}
          </button>
        )}
        {draftId && (
          <button type="button" class="danger" disabled={busy !== null} onClick={deleteDraft}>
            Delete draft
          </button>
        )}
        <a href={draftId ? '#/drafts' : '#/inbox'}>Cancel</a>
      </div>
    </form>
  );
}
