import { signal } from '@preact/signals';

/**
 * The console's credentials. The token lives in sessionStorage (this tab only, gone when it
 * closes), never in a URL or a cookie, so no other site can make the browser use it.
 */
const KEY = 'mailbox-console.session';

export interface SessionState {
  token: string;
  kind: 'mailbox' | 'domain';
  /** The mailbox the console shows (a mailbox token's own, or the one a domain token opened). */
  mailboxAddress: string | null;
}

function load(): SessionState | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as SessionState) : null;
  } catch {
    return null;
  }
}

const initial = load();

export const session = {
  token: signal<string | null>(initial?.token ?? null),
  kind: signal<'mailbox' | 'domain' | null>(initial?.kind ?? null),
  mailboxAddress: signal<string | null>(initial?.mailboxAddress ?? null),
  /** Set by the API client when the token answers 401: the console asks to sign in again. */
  expired: signal(false),
};

export const tokenKind = (token: string): 'mailbox' | 'domain' | null =>
  token.startsWith('mbxm_') ? 'mailbox' : token.startsWith('mbxd_') ? 'domain' : null;

export function signIn(state: SessionState): void {
  session.token.value = state.token;
  session.kind.value = state.kind;
  session.mailboxAddress.value = state.mailboxAddress;
  session.expired.value = false;
  sessionStorage.setItem(KEY, JSON.stringify(state));
}

export function setMailbox(address: string | null): void {
  session.mailboxAddress.value = address;
  if (session.token.value && session.kind.value)
    sessionStorage.setItem(
      KEY,
      JSON.stringify({ token: session.token.value, kind: session.kind.value, mailboxAddress: address }),
    );
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
  session.token.value = null;
  session.kind.value = null;
  session.mailboxAddress.value = null;
  session.expired.value = false;
}

/** The mailboxAddress parameter: a domain token must name the mailbox, a mailbox token need not. */
export const mailboxParam = (): { mailboxAddress?: string } =>
  session.kind.value === 'domain' && session.mailboxAddress.value
    ? { mailboxAddress: session.mailboxAddress.value }
    : {};
