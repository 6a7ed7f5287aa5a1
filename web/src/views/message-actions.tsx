import { api, download } from '../api';
import { mailboxParam } from '../session';
import { go } from '../router';
import type { MessageDetail } from '../types';
import { cancelSend } from './scheduled';

/**
 * The toolbar of a message: reply, reply all, forward, its conversation; release when screening
 * holds it (MailboxApprove or a domain token), cancel when its send is scheduled; read state,
 * delete, the .eml. `act` runs a step and shows its refusal; `changed` shows the new state.
 */
export function MessageActions(props: {
  m: MessageDetail;
  act: (step: () => Promise<unknown>) => Promise<void>;
  changed: (m: MessageDetail, notice: string) => void;
}) {
  const { m, act, changed } = props;
  const path = `/api/messages/${encodeURIComponent(m.messageId)}`;
  const held = m.screening?.held === true;
  return (
    <div class="toolbar">
      <a href={held ? '#/screened' : '#/inbox'}>← {held ? 'Screened' : 'Inbox'}</a>
      <button onClick={() => go('reply', m.messageId)}>Reply</button>
      <button onClick={() => go('reply-all', m.messageId)}>Reply all</button>
      <button onClick={() => go('forward', m.messageId)}>Forward</button>
      <a href={`#/thread/${encodeURIComponent(m.threadId)}`}>Conversation</a>
      {held && (
        <button
          onClick={() =>
            act(async () => {
              // The release answers { released }; false: someone released it first. Either way it is out.
              await api('POST', `${path}/release`, { query: mailboxParam() });
              changed(
                { ...m, screening: m.screening ? { ...m.screening, held: false } : null },
                'Released to the agent: it is in the Inbox, its search, threads and waits now.',
              );
            })
          }
        >
          Release to the agent
        </button>
      )}
      {m.status === 'scheduled' && (
        <button
          class="danger"
          onClick={() =>
            act(async () => {
              if (!confirm('Cancel this send? It will never leave.')) return;
              await cancelSend(m.messageId);
              changed({ ...m, status: 'cancelled', deliveryStatus: 'cancelled' }, 'Send cancelled: it will not leave.');
            })
          }
        >
          Cancel send
        </button>
      )}
      <button
        onClick={() =>
          act(async () => {
            await api('PUT', `${path}/read-state`, { body: { isRead: !m.isRead, ...mailboxParam() } });
            changed({ ...m, isRead: !m.isRead }, `Marked ${m.isRead ? 'unread' : 'read'}.`);
          })
        }
      >
        Mark {m.isRead ? 'unread' : 'read'}
      </button>
      <button
        class="danger"
        onClick={() =>
          act(async () => {
            if (!confirm('Delete this message?')) return;
            await api('DELETE', path, { query: mailboxParam() });
            go('inbox');
          })
        }
      >
        Delete
      </button>
      {m.rawContentPath && (
        <button class="link" onClick={() => act(() => download(`${path}/raw`, `${m.messageId}.eml`))}>
          Download .eml
        </button>
      )}
    </div>
  );
}
