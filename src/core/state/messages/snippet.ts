const SNIPPET_CHARS = 140;

/**
 * The first words of the text body on one line, for a list: quoted lines (`> …`) and the
 * signature are left out, whitespace collapsed, cut at a word with an ellipsis.
 */
export function snippetOf(text: string | null | undefined): string {
  if (!text) return '';
  const flat = flatStart(text);
  if (flat.length <= SNIPPET_CHARS) return flat;
  const cut = flat.slice(0, SNIPPET_CHARS);
  const space = cut.lastIndexOf(' ');
  return `${space > SNIPPET_CHARS / 2 ? cut.slice(0, space) : cut}…`;
}

/**
 * The kept lines joined with single spaces, whitespace collapsed and trimmed, read only as far as
 * the snippet needs (a body is often kilobytes): the whole of it when that is at most
 * SNIPPET_CHARS + 1 characters, otherwise a string whose first SNIPPET_CHARS + 1 characters are the
 * whole one's (later lines only change what follows them).
 */
function flatStart(text: string): string {
  let kept = '';
  for (let start = 0; start <= text.length;) {
    const nl = text.indexOf('\n', start);
    const end = nl === -1 ? text.length : nl;
    // Lines as split(/\r?\n/) makes them: a CR right before the LF belongs to the line break.
    const line = text.slice(start, nl !== -1 && end > start && text.charCodeAt(end - 1) === 13 ? end - 1 : end);
    if (line === '-- ') break;
    if (!line.startsWith('>')) kept = kept ? `${kept} ${line}` : line;
    if (nl === -1) break;
    start = nl + 1;
    // Past the snippet and a character more once collapsed: nothing after can change its start.
    if (kept.length > 2 * SNIPPET_CHARS) {
      const flat = collapse(kept);
      if (flat.length > SNIPPET_CHARS + 1) return flat;
      kept = flat;
    }
  }
  return collapse(kept);
}

const collapse = (s: string): string => s.replace(/\s+/g, ' ').trim();
