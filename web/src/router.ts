import { signal } from '@preact/signals';

/**
 * Hash routes (`#/inbox`, `#/message/msg_…`): one HTML document, so the server needs one route,
 * and the hash never reaches the server or a Referer. Ids only: never a token.
 */
export const route = signal(parse());

function parse(): string[] {
  return location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

addEventListener('hashchange', () => (route.value = parse()));

export function go(...parts: string[]): void {
  location.hash = '#/' + parts.map(encodeURIComponent).join('/');
}
