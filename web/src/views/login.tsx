import { useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { session, signIn, tokenKind } from '../session';

interface LoginResult {
  accessToken: string;
  mailboxAddress: string;
}

/** Address + password (POST /api/mailbox/auth/login/password), or a pasted token. */
export function Login() {
  const [address, setAddress] = useState('');
  const [password, setPassword] = useState('');
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(
    session.expired.value ? 'Your session ended. Sign in again.' : null,
  );
  const [busy, setBusy] = useState(false);

  const withPassword = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await api<LoginResult>('POST', '/api/mailbox/auth/login/password', {
        body: { mailboxAddress: address.trim(), password },
        token: null,
      });
      signIn({ token: r.accessToken, kind: 'mailbox', mailboxAddress: r.mailboxAddress });
      location.hash = '#/inbox';
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  const withToken = async (e: Event) => {
    e.preventDefault();
    const value = token.trim();
    const kind = tokenKind(value);
    if (!kind) return setError('That is not an access token: tokens start with mbxm_ (mailbox) or mbxd_ (domain).');
    setBusy(true);
    setError(null);
    try {
      // Any cheap authenticated call proves the token before it is kept.
      if (kind === 'domain') await api('GET', '/api/domain/mailboxes', { query: { limit: 1 }, token: value });
      else await api('GET', '/api/messages', { query: { limit: 1 }, token: value });
      signIn({ token: value, kind, mailboxAddress: null });
      location.hash = kind === 'domain' ? '#/domain' : '#/inbox';
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="login">
      <h1>mailbox-service console</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <form onSubmit={withPassword} aria-label="Sign in with a password">
        <h2>Sign in with the mailbox password</h2>
        <label>
          Address
          <input
            name="address"
            type="email"
            autocomplete="username"
            required
            value={address}
            onInput={(e) => setAddress(e.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      <form onSubmit={withToken} aria-label="Sign in with a token">
        <h2>…or paste an access token</h2>
        <label>
          Token (mbxm_… or mbxd_…)
          <input
            name="token"
            type="password"
            autocomplete="off"
            required
            value={token}
            onInput={(e) => setToken(e.currentTarget.value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          Use token
        </button>
      </form>
      <p class="hint">
        The token stays in this tab's session storage and is sent only in the Authorization header. Quick start (
        <code>make run</code>): <code>agent@example.test</code> / <code>agent-password-123</code>.
      </p>
    </main>
  );
}
