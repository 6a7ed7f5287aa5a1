import { useEffect, useState } from 'preact/hooks';
import { session, setMailbox, signOut } from './session';
import { route, go } from './router';
import { connectLive, lastEvent, liveState } from './live';
import { features, detectFeatures } from './features';
import { Login } from './views/login';
import { Inbox } from './views/inbox';
import { MessageView } from './views/message';
import { ThreadView } from './views/thread';
import { Compose } from './views/compose';
import { Drafts } from './views/drafts';
import { Tokens } from './views/tokens';
import { DomainMailboxes } from './views/domain';
import { Approvals } from './views/approvals';
import { Audit } from './views/audit';
import { KeyHelp } from './views/key-help';
import { ApproveLink } from './views/approve-link';
import { Scheduled } from './views/scheduled';
import { Threads } from './views/threads';
import { Policy } from './views/policy';
import { THREAD_STATES, type ThreadState } from './types';

/** The console: sign in, then one screen per hash route (router.ts). */
export function App() {
  useEffect(() => void detectFeatures(), []);
  const [help, setHelp] = useState(false);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.target as HTMLElement).closest('input, textarea, select')) return;
      if (e.key === '?') setHelp((h) => !h);
      else if (e.key === 'Escape') setHelp(false);
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  const token = session.token.value;
  const followed = session.kind.value === 'domain' ? session.mailboxAddress.value : null;
  useEffect(() => {
    if (!token || (session.kind.value === 'domain' && !followed)) return;
    return connectLive(
      token,
      followed,
      (event) => (lastEvent.value = event),
      (address) => {
        if (!session.mailboxAddress.value) setMailbox(address);
      },
    );
  }, [token, followed]);
  // A mailed approval link opens its page with or without a session: the link is its own credential.
  if (route.value[0] === 'approve') return <ApproveLink credential={route.value[1] ?? ''} />;
  if (!session.token.value || session.expired.value) return <Login />;
  const [screen = session.kind.value === 'domain' && !session.mailboxAddress.value ? 'domain' : 'inbox', a, b] =
    route.value;
  const mailboxOpen = session.kind.value === 'mailbox' || session.mailboxAddress.value !== null;
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href="#/inbox">
          mailbox-service
        </a>
        <nav aria-label="Main">
          {mailboxOpen && <a href="#/inbox">Mail</a>}
          {mailboxOpen && <a href="#/compose">Compose</a>}
          {mailboxOpen && <a href="#/policy">Policy</a>}
          {session.kind.value === 'mailbox' && <a href="#/tokens">Tokens</a>}
          {session.kind.value === 'domain' && <a href="#/domain">Domain mailboxes</a>}
          {features.value.audit && <a href="#/audit">Audit</a>}
          <a href="/api/docs" target="_blank" rel="noopener">
            API reference
          </a>
        </nav>
        <span class="who">
          {session.mailboxAddress.value ?? (session.kind.value === 'domain' ? 'domain token' : '')}
          {session.kind.value === 'domain' && session.mailboxAddress.value && (
            <button
              class="link"
              onClick={() => {
                setMailbox(null);
                go('domain');
              }}
            >
              close mailbox
            </button>
          )}
          <span class={`live ${liveState.value}`} title="Real-time connection">
            {liveState.value}
          </span>
          <button class="link" onClick={() => signOut()}>
            Sign out
          </button>
        </span>
      </header>
      <main id="main">{screenFor(screen, a, b)}</main>
      {help && <KeyHelp onClose={() => setHelp(false)} />}
    </div>
  );
}

function screenFor(screen: string, a?: string, b?: string) {
  switch (screen) {
    case 'message':
      return <MessageView messageId={a!} />;
    case 'thread':
      return <ThreadView threadId={a!} />;
    case 'compose':
      return <Compose key="new" />;
    // Keyed by what is written, so going from a reply to a forward starts a fresh form.
    case 'reply':
      return <Compose key={`reply/${a}`} parentId={a!} mode="reply" />;
    case 'reply-all':
      return <Compose key={`reply-all/${a}`} parentId={a!} mode="replyAll" />;
    case 'forward':
      return <Compose key={`forward/${a}`} parentId={a!} mode="forward" />;
    case 'drafts':
      return <Drafts />;
    case 'draft':
      // Keyed by the draft, so opening another draft starts a fresh form.
      return <Compose key={a} draftId={a!} />;
    case 'tokens':
      return <Tokens mailboxId={a ?? null} address={b ?? null} />;
    case 'domain':
      return <DomainMailboxes />;
    case 'approvals':
    case 'held':
      return <Approvals />;
    case 'sent':
      return <Inbox folder="sent" />;
    case 'screened':
      return <Inbox folder="screened" />;
    case 'scheduled':
      return <Scheduled />;
    case 'threads':
      return <Threads state={THREAD_STATES.some((s) => s.id === a) ? (a as ThreadState) : null} />;
    case 'policy':
      return <Policy />;
    case 'audit':
      return <Audit />;
    default:
      return <Inbox folder="inbox" />;
  }
}
