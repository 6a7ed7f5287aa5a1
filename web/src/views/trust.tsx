/**
 * Where a message came from and whether its sender is proven. Shown only when the server sends
 * the fields (origin/authenticated on summaries, authentication on details).
 */
export function TrustBadge(props: {
  origin?: string | undefined;
  authenticated?: boolean | undefined;
  authentication?: Record<string, unknown> | null | undefined;
}) {
  const { origin, authenticated, authentication } = props;
  if (origin === undefined && authenticated === undefined && !authentication) return null;
  const label = origin === 'internal' ? 'internal' : origin === 'external' ? 'external' : 'origin unknown';
  const verdict = authenticated === true ? 'verified' : authenticated === false ? 'unverified' : null;
  return (
    <span class={`trust ${authenticated === false ? 'warn' : 'ok'}`}>
      {label}
      {verdict && ` · ${verdict}`}
      {authentication &&
        ` · SPF ${word(authentication.spf)} · DKIM ${word(authentication.dkim)} · DMARC ${word(authentication.dmarc)}`}
    </span>
  );
}

/** RFC 8601 result words; anything richer (a list of DKIM signatures) is summarised by its results. */
function word(value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(word).join(', ') || 'none';
  if (typeof value === 'object' && 'result' in value) return word((value as { result: unknown }).result);
  return JSON.stringify(value);
}
