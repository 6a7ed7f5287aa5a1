import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam } from '../session';
import { go } from '../router';
import { features } from '../features';
import type { Attachment, Draft, MessageDetail } from '../types';
import { prefill, type ComposeMode } from './compose-prefill';
import { ComposeContext, GoesTo, split } from './compose-recipients';
import { ComposeAttachments } from './compose-attachments';
import { postMessage } from './compose-send';

/** The console's compose form, as a draft's fields (POST /api/drafts, PATCH /api/drafts/{draftId}). */
interface DraftFields {
  toAddress: string[];
  ccAddresses: string[];
  subject: string;
  bodyText: string;
  attachmentIds: string[];
  parentMessageId?: string;
  replyAll?: boolean;
}

const TITLES: Record<ComposeMode, string> = {
  new: 'New message',
  reply: 'Reply',
  replyAll: 'Reply all',
  forward: 'Forward',
};

/**
 * New message, reply, reply all, forward, or a saved draft (#/draft/{draftId}, filled from GET
 * /api/drafts/{draftId}). Attachments are uploaded first (POST /api/messages/attachments), then
 * named by id. A reply goes through POST /api/messages/{id}/reply (`replyAll` for reply all: the
 * server adds the Cc); a forward through POST /api/messages/{id}/forward, which sends the
 * original's attachments along. To and subject are sent only when changed, so the server's own
 * choice (the Reply-To, one `Re: `, `Fwd: `) stands otherwise. Save draft keeps the form as a draft;
 * Send of a draft sends it through POST /api/drafts/{draftId}/send. Sends carry an Idempotency-Key,
 * so a double click or a retry sends once.
 */
export function Compose(props: { parentId?: string; mode?: ComposeMode; draftId?: string }) {
  const [mode, setMode] = useState<ComposeMode>(props.mode ?? 'new');
  const [parent, setParent] = useState<MessageDetail | null>(null);
  const [draftId, setDraftId] = useState<string | null>(props.draftId ?? null);
  const [parentId, setParentId] = useState<string | null>(props.parentId ?? null);
  const [to, setTo] = useState('');
  const [cc, setCc] = useState('');
  const [subject, setSubject] = useState('');
  const [body, setBody] = useState('');
  const [start, setStart] = useState({ to: '', subject: '' });
  const [files, setFiles] = useState<File[]>([]);
  const [held, setHeld] = useState<Attachment[]>([]);
  const [busy, setBusy] = useState<'send' | 'save' | 'delete' | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [idempotencyKey] = useState(() => crypto.randomUUID());

  const original = (id: string) =>
    api<MessageDetail>('GET', `/api/messages/${encodeURIComponent(id)}`, { query: mailboxParam() });

  useEffect(() => {
    if (!props.parentId || !props.mode) return;
    original(props.parentId).then(
      (m) => {
        const p = prefill(props.mode!, m);
        setParent(m);
        setTo(p.to);
        setSubject(p.subject);
        setBody(p.body);
        setStart({ to: p.to, subject: p.subject });
      },
      (err) => setError(errorText(err)),
    );
  }, [props.parentId, props.mode]);

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
        if (d.parentMessageId) {
          setMode(d.replyAll ? 'replyAll' : 'reply');
          original(d.parentMessageId).then(setParent, () => setParent(null));
        }
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
      ...(parentId && !draftId ? { parentMessageId: parentId, replyAll: mode === 'replyAll' } : {}),
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

  /** The form as it is posted (compose-send.ts). */
  const post = async () =>
    postMessage({
      mode,
      parentId,
      to,
      cc,
      subject,
      body,
      start,
      attachmentIds: await uploadFiles(),
      idempotencyKey,
    });

  const send = (e: Event) => {
    e.preventDefault();
    void run('send', async () => {
      if (draftId) {
        const id = await save();
        const sent = await api<{ messageId: string }>('POST', `/api/drafts/${encodeURIComponent(id)}/send`, {
          body: mailboxParam(),
          headers: { 'Idempotency-Key': idempotencyKey },
        });
        go('message', sent.messageId);
        return;
      }
      go('message', (await post()).messageId);
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

  const title = draftId ? 'Draft' : TITLES[mode];
  const replying = mode === 'reply' || mode === 'replyAll';
  return (
    <form class="compose" onSubmit={send} aria-label={title}>
      <h1>{title}</h1>
      <ComposeContext mode={mode} parent={parent} />
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
        <input name="to" required={!replying} value={to} onInput={(e) => setTo(e.currentTarget.value)} />
      </label>
      <label>
        Cc
        <input name="cc" value={cc} onInput={(e) => setCc(e.currentTarget.value)} />
      </label>
      <GoesTo mode={mode} parent={parent} to={to} cc={cc} />
      <label>
        Subject
        <input name="subject" value={subject} onInput={(e) => setSubject(e.currentTarget.value)} />
      </label>
      <label>
        {mode === 'forward' ? 'Note (optional, above the original)' : 'Message'}
        <textarea
          name="body"
          rows={12}
          required={mode !== 'forward'}
          value={body}
          onInput={(e) => setBody(e.currentTarget.value)}
        />
      </label>
      <ComposeAttachments
        held={held}
        remove={(id) => setHeld(held.filter((h) => h.attachmentId !== id))}
        choose={setFiles}
        label={mode === 'forward' ? 'More attachments' : 'Attachments'}
      />
      <div class="toolbar">
        <button type="submit" disabled={busy !== null}>
          {busy === 'send' ? 'Sending…' : 'Send'}
        </button>
        {features.value.drafts && mode !== 'forward' && (
          <button type="button" disabled={busy !== null} onClick={saveDraft}>
            {busy === 'save' ? 'Saving…' : 'Save draft'}
          </button>
        )}
        {draftId && (
          <button type="button" class="danger" disabled={busy !== null} onClick={deleteDraft}>
            Delete draft
          </button>
        )}
        <a href={draftId ? '#/drafts' : parentId ? `#/message/${encodeURIComponent(parentId)}` : '#/inbox'}>Cancel</a>
      </div>
    </form>
  );
}
