import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { useNewestLoad } from '../newest-load';
import { setMailbox } from '../session';
import { go } from '../router';
import type { MailboxView, Page } from '../types';

/** With a domain token: the domain's mailboxes (create, set password, tokens, open the inbox). */
export function DomainMailboxes() {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState<Page<MailboxView> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [address, setAddress] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [passwordFor, setPasswordFor] = useState<MailboxView | null>(null);
  const [password, setPassword] = useState('');
  const cursor = cursors[cursors.length - 1];

  const startLoad = useNewestLoad();
  const load = () => {
    const newest = startLoad();
    return api<Page<MailboxView>>('GET', '/api/domain/mailboxes', { query: { limit: 50, cursor } }).then(
      (p) => newest() && setPage(p),
      (err) => newest() && setError(errorText(err)),
    );
  };
  useEffect(() => void load(), [cursor]);

  const act = async (fn: () => Promise<string>) => {
    setError(null);
    setNotice(null);
    try {
      setNotice(await fn());
      await load();
    } catch (err) {
      setError(errorText(err));
    }
  };

  return (
    <section aria-labelledby="domain-title">
      <h1 id="domain-title">Domain mailboxes</h1>
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
      <form
        class="inline-form"
        aria-label="Create a mailbox"
        onSubmit={(e) => {
          e.preventDefault();
          const value = address.trim();
          void act(async () => {
            const r = await api<{ mailbox: MailboxView; initialAccessToken: string }>('POST', '/api/domain/mailboxes', {
              body: { ...(value.includes('@') ? { address: value } : { localPart: value }), displayName },
            });
            setAddress('');
            setDisplayName('');
            return `Created ${r.mailbox.address}. Its bootstrap token (shown once): ${r.initialAccessToken}`;
          });
        }}
      >
        <label>
          Address or local part
          <input name="address" required value={address} onInput={(e) => setAddress(e.currentTarget.value)} />
        </label>
        <label>
          Display name
          <input name="displayName" value={displayName} onInput={(e) => setDisplayName(e.currentTarget.value)} />
        </label>
        <button type="submit">Create mailbox</button>
      </form>
      {passwordFor && (
        <form
          class="inline-form"
          aria-label="Set password"
          onSubmit={(e) => {
            e.preventDefault();
            void act(async () => {
              await api('POST', `/api/domain/mailboxes/${encodeURIComponent(passwordFor.mailboxId)}/password`, {
                body: { password },
              });
              setPasswordFor(null);
              setPassword('');
              return `Password of ${passwordFor.address} set.`;
            });
          }}
        >
          <label>
            New password for {passwordFor.address} (8 characters or more)
            <input
              name="newPassword"
              type="password"
              autocomplete="new-password"
              minLength={8}
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </label>
          <button type="submit">Save password</button>
          <button type="button" class="link" onClick={() => setPasswordFor(null)}>
            Cancel
          </button>
        </form>
      )}
      <table>
        <thead>
          <tr>
            <th>Address</th>
            <th>Name</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {(page?.items ?? []).map((m) => (
            <tr key={m.mailboxId}>
              <td>{m.address}</td>
              <td>{m.displayName}</td>
              <td>
                <button
                  onClick={() => {
                    setMailbox(m.address);
                    go('inbox');
                  }}
                >
                  Open inbox
                </button>
                <button onClick={() => go('tokens', m.mailboxId, m.address)}>Tokens</button>
                <button onClick={() => setPasswordFor(m)}>Set password</button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div class="pager">
        <button disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          ← Previous
        </button>
        <span>{page ? `${page.totalCount} mailbox(es)` : 'loading…'}</span>
        <button
          disabled={!page?.nextCursor}
          onClick={() => page?.nextCursor && setCursors([...cursors, page.nextCursor])}
        >
          Next →
        </button>
      </div>
    </section>
  );
}
