import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { session } from '../session';
import { features } from '../features';
import { when } from '../types';

interface AuditEntry {
  [key: string]: unknown;
}

/** The audit trail of send attempts and decisions, when the server has it (feature-detected). */
export function Audit() {
  const domain = session.kind.value === 'domain' && features.value.domainAudit;
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState<{ items: AuditEntry[]; nextCursor: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const cursor = cursors[cursors.length - 1];
  useEffect(() => {
    api<{ items: AuditEntry[]; nextCursor: string | null }>(
      'GET',
      domain ? '/api/domain/audit' : '/api/mailbox/audit',
      {
        query: { limit: 50, cursor },
      },
    ).then(setPage, (err) => setError(errorText(err)));
  }, [cursor, domain]);
  const columns = [...new Set((page?.items ?? []).flatMap((e) => Object.keys(e)))].slice(0, 8);
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit trail</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <table>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c}>{c}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {(page?.items ?? []).map((e, i) => (
            <tr key={i}>
              {columns.map((c) => (
                <td key={c}>{/Ts$/.test(c) && typeof e[c] === 'number' ? when(e[c] as number) : String(e[c] ?? '')}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      <div class="pager">
        <button disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          ← Newer
        </button>
        <button
          disabled={!page?.nextCursor}
          onClick={() => page?.nextCursor && setCursors([...cursors, page.nextCursor])}
        >
          Older →
        </button>
      </div>
    </section>
  );
}
