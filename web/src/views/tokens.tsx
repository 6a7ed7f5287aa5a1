import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { useNewestLoad } from '../newest-load';
import { MAILBOX_SCOPES, when, type TokenRecord } from '../types';
import { session } from '../session';

/**
 * A mailbox's tokens: with a mailbox token (TokenManage) its own mailbox's, with a domain token
 * those of the mailbox picked on the domain screen. Create (scopes, expiry), reveal while the
 * window is open, disable, delete. A plaintext is shown once, in the page only.
 */
export function Tokens(props: { mailboxId: string | null; address: string | null }) {
  const base = props.mailboxId
    ? `/api/domain/mailboxes/${encodeURIComponent(props.mailboxId)}/access-tokens`
    : '/api/mailbox/access-tokens';
  const [tokens, setTokens] = useState<TokenRecord[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [shown, setShown] = useState<{ tokenId: string; accessToken: string } | null>(null);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Set<string>>(new Set(['MailboxRead']));
  const [expires, setExpires] = useState('');
  // A domain token grants every mailbox scope; a mailbox token only what it holds itself, and
  // never MailboxApprove or WebhookManage (an agent must not approve its own held mail).
  const mayGrant = (s: { domainOnly?: boolean }) => session.kind.value === 'domain' || !s.domainOnly;

  const startLoad = useNewestLoad();
  const load = () => {
    const newest = startLoad();
    return api<TokenRecord[] | { items: TokenRecord[] }>('GET', base).then(
      (r) => newest() && setTokens(Array.isArray(r) ? r : r.items),
      (err) => newest() && setError(errorText(err)),
    );
  };
  useEffect(() => void load(), [base]);

  const act = async (fn: () => Promise<unknown>) => {
    setError(null);
    try {
      await fn();
      await load();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const create = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      const expiresAtTs = expires ? new Date(`${expires}T23:59:59`).getTime() : undefined;
      const created = await api<{ tokenId: string; accessToken: string }>('POST', base, {
        body: { tokenName: name.trim(), scopes: [...scopes], ...(expiresAtTs ? { expiresAtTs } : {}) },
      });
      setShown({ tokenId: created.tokenId, accessToken: created.accessToken });
      setName('');
    });
  };

  return (
    <section aria-labelledby="tokens-title">
      <h1 id="tokens-title">Access tokens{props.address ? ` of ${props.address}` : ''}</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {shown && (
        <div class="secret" role="status">
          <p>
            Token <code>{shown.tokenId}</code>. Copy it now. The server keeps only its hash: after the reveal window
            (TOKEN_REVEAL_WINDOW, a day by default) nobody can show it again, and a lost token is replaced by creating a
            new one.
          </p>
          <input readOnly class="plaintext" aria-label="Token plaintext" value={shown.accessToken} />
          <button onClick={() => void navigator.clipboard?.writeText(shown.accessToken)}>Copy</button>
          <button class="link" onClick={() => setShown(null)}>
            Hide
          </button>
        </div>
      )}
      <form class="token-create" onSubmit={create} aria-label="Create a token">
        <h2>Create a token</h2>
        <label>
          Name
          <input name="tokenName" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <fieldset>
          <legend>Scopes</legend>
          {MAILBOX_SCOPES.map((s) => (
            <label key={s.scope} class="inline scope">
              <input
                type="checkbox"
                name={`scope-${s.scope}`}
                disabled={!mayGrant(s)}
                checked={scopes.has(s.scope)}
                onChange={() => {
                  const next = new Set(scopes);
                  if (next.has(s.scope)) next.delete(s.scope);
                  else next.add(s.scope);
                  setScopes(next);
                }}
              />{' '}
              <code>{s.scope}</code> <span class="meta">{s.what}</span>
              {!mayGrant(s) && <span class="meta"> (granted with the domain token: Domain mailboxes → Tokens)</span>}
            </label>
          ))}
        </fieldset>
        <label>
          Expires (optional; empty: the server's default; never after the token you are signed in with)
          <input name="expires" type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
        </label>
        <button type="submit">Create token</button>
      </form>
      <table class="tokens">
        <thead>
          <tr>
            <th>Name</th>
            <th>Prefix</th>
            <th>Scopes</th>
            <th>Expires</th>
            <th>Last used</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {(tokens ?? []).map((t) => (
            <tr key={t.tokenId} data-token-id={t.tokenId} class={t.disabledAtTs ? 'disabled' : ''}>
              <td>{t.tokenName}</td>
              <td>
                <code>{t.tokenPrefix}…</code>
              </td>
              <td>{t.scopes.join(', ')}</td>
              <td>{when(t.expiresAtTs)}</td>
              <td>{when(t.lastUsedAtTs)}</td>
              <td>
                {t.canRevealPlaintext && (
                  <button
                    onClick={() =>
                      act(async () =>
                        setShown(
                          await api<{ tokenId: string; accessToken: string }>(
                            'POST',
                            `${base}/${encodeURIComponent(t.tokenId)}/reveal`,
                          ),
                        ),
                      )
                    }
                  >
                    Reveal
                  </button>
                )}
                {!t.disabledAtTs && (
                  <button onClick={() => act(() => api('POST', `${base}/${encodeURIComponent(t.tokenId)}/disable`))}>
                    Disable
                  </button>
                )}
                {t.disabledAtTs && <span class="tag">disabled</span>}
                <button
                  class="danger"
                  onClick={() =>
                    confirm(`Delete token ${t.tokenName}?`) &&
                    act(() => api('DELETE', `${base}/${encodeURIComponent(t.tokenId)}`))
                  }
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
