import { useState } from 'preact/hooks';
import { ApiError, errorText } from '../api';

/** The index a refusal names (`approverAddresses.2: …`), or -1 for the list as a whole. */
const namedIndex = (err: unknown): number => {
  const m = err instanceof ApiError ? /^approverAddresses(?:\.(\d+))?:/.exec(err.errMsg ?? '') : null;
  return m?.[1] !== undefined ? Number(m[1]) : -1;
};

/**
 * The approvers of the mailbox (`approverAddresses`): each is mailed a one-time approval link for
 * every held send. Add and Remove save at once (`save` replaces the list); a refusal shows the
 * server's sentence, which names the field, and marks the entry it names.
 */
export function Approvers(props: { list: string[]; canEdit: boolean; save: (next: string[]) => Promise<void> }) {
  const [address, setAddress] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ text: string; index: number } | null>(null);
  const change = async (next: string[], after: () => void) => {
    setBusy(true);
    setError(null);
    try {
      await props.save(next);
      after();
    } catch (err) {
      setError({ text: errorText(err), index: namedIndex(err) });
    } finally {
      setBusy(false);
    }
  };
  const newIndex = props.list.length;
  const invalidNew = error !== null && (error.index === newIndex || error.index === -1) && address !== '';
  return (
    <section aria-labelledby="approvers-title" class="approvers">
      <h2 id="approvers-title">Approvers</h2>
      <p class="hint">
        Each address gets every held send of this mailbox by mail, with a one-time link to approve or reject it. An
        approver must be a person, not an address of this mailbox (its agent would read the link).
      </p>
      {error && (
        <p class="error" role="alert" id="approvers-error">
          {error.text}
        </p>
      )}
      {props.list.length === 0 && <p class="empty">No approvers: held mail is decided in the console or the API.</p>}
      <ul aria-label="Approver addresses">
        {props.list.map((a, i) => (
          <li key={a} aria-invalid={error?.index === i ? 'true' : undefined}>
            {a}{' '}
            {props.canEdit && (
              <button
                class="link"
                disabled={busy}
                aria-label={`Remove ${a}`}
                onClick={() =>
                  void change(
                    props.list.filter((x) => x !== a),
                    () => undefined,
                  )
                }
              >
                remove
              </button>
            )}
          </li>
        ))}
      </ul>
      {props.canEdit && (
        <form
          class="toolbar"
          aria-label="Add an approver"
          onSubmit={(e) => {
            e.preventDefault();
            void change([...props.list, address.trim()], () => setAddress(''));
          }}
        >
          <label>
            Approver address
            <input
              name="approver"
              inputMode="email"
              autoComplete="off"
              value={address}
              aria-invalid={invalidNew ? 'true' : undefined}
              aria-describedby={invalidNew ? 'approvers-error' : undefined}
              onInput={(e) => setAddress(e.currentTarget.value)}
            />
          </label>
          <button type="submit" disabled={busy || !address.trim()}>
            Add
          </button>
        </form>
      )}
    </section>
  );
}
