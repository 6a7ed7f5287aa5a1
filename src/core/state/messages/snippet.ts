const SNIPPET_CHARS = 140;

/**
 * The first words of the text body on one line, for a list: quoted lines (`> …`) and the
 * signature are left out, whitespace collapsed, cut at a word with an ellipsis.
 */
export function snippetOf(text: string | null | undefined): string {
  if (!text) return '';
  const lines: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line === '-- ') break;
    if (!line.startsWith('>')) lines.push(line);
  }
  const flat = lines.join(' ').replace(/\s+/g, ' ').trim();
  if (flat.length <= SNIPPET_CHARS) return flat;
  const cut = flat.slice(0, SNIPPET_CHARS);
  const space = cut.lastIndexOf(' ');
  return `${space > SNIPPET_CHARS / 2 ? cut.slice(0, space) : cut}…`;
}
