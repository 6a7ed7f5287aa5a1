// What the docs tests read out of a Markdown file: links outside the repository, relative links,
// and development history. Code (fenced blocks and inline code) is not prose and is skipped for
// relative links; URLs are judged wherever they appear, since a pasted URL leaves the repository too.

/** Hosts a doc may name: the local service and the reserved example domains (RFC 2606, RFC 6761). */
const INSIDE_HOST = /^(localhost|127\.0\.0\.1|\[::1\]|0\.0\.0\.0)$|(^|\.)example(\.(com|org|net|test))?$|\.test$/i;

/** Every http(s) host the text names that is not a local or example host, in order. */
export function externalHosts(text: string): string[] {
  return [...text.matchAll(/https?:\/\/(\[[0-9a-f:]+\]|[a-z0-9][a-z0-9.-]*)/gi)]
    .map((m) => m[1]!.replace(/\.$/, ''))
    .filter((host) => !INSIDE_HOST.test(host));
}

const withoutCode = (text: string): string => text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');

/** Targets of Markdown links and images that point into the repository, without their #fragment. */
export function relativeLinks(text: string): string[] {
  return [...withoutCode(text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^([a-z][a-z0-9+.-]*:|#)/i.test(target))
    .map((target) => decodeURI(target.split('#')[0]!));
}

/** "session 18", "issue 15", "sessions 20": numbered development history. */
export function historyMentions(text: string): string[] {
  return [...text.matchAll(/\b(sessions?|issues?) #?\d+/gi)].map((m) => m[0]);
}
