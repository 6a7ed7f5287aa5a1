import { signal } from '@preact/signals';

/**
 * Hash routes (`#/inbox`, `#/message/msg_…`): one HTML document, so the server needs one route,
 * and the hash never reaches the server or a Referer. Ids only, never a token; the one credential
 * a hash carries is a mailed approval link's (`#/approve/<credential>`), for exactly that reason,
 * and its page takes it out of the address bar at once (views/approve-link.tsx).
 */
export const route = signal(parse());

function parse(): string[] {
  return location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

addEventListener('hashchange', () => (route.value = parse()));

export function go(...parts: string[]): void {
  location.hash = '#/' + parts.map(encodeURIComponent).join('/');
}
