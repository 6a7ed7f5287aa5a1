import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam } from '../session';
import { THREAD_STATES, type ThreadState, type ThreadSummary } from '../types';

/** A `datetime-local` value (the browser's time zone) for Unix ms, and back; '' for none. */
export const toLocalInput = (ts: number | null): string => {
  if (ts === null) return '';
  const d = new Date(ts);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};
const fromLocalInput = (value: string): number | null => (value ? new Date(value).getTime() : null);

/**
 * Sets the thread's state and follow-up (PUT /api/threads/{threadId}/state). The follow-up is sent
 * only when it was changed: the same time sent again would re-arm an event that already fired.
 * An empty follow-up clears it (`null`).
 */
export function ThreadStateForm(props: {
  threadId: string;
  state: ThreadState;
  followUpAtTs: number | null;
  onSaved: (t: ThreadSummary) => void;
}) {
  const [state, setState] = useState<ThreadState>(props.state);
  const [followUp, setFollowUp] = useState(toLocalInput(props.followUpAtTs));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setState(props.state);
    setFollowUp(toLocalInput(props.followUpAtTs));
  }, [props.state, props.followUpAtTs]);

  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const changed = followUp !== toLocalInput(props.followUpAtTs);
      const saved = await api<ThreadSummary>('PUT', `/api/threads/${encodeURIComponent(props.threadId)}/state`, {
        body: { state, ...(changed ? { followUpAtTs: fromLocalInput(followUp) } : {}), ...mailboxParam() },
      });
      props.onSaved(saved);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="thread-state" aria-label="Thread state" onSubmit={save}>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <label>
        State
        <select name="state" value={state} onChange={(e) => setState(e.currentTarget.value as ThreadState)}>
          {THREAD_STATES.map((s) => (
            <option key={s.id} value={s.id}>
              {s.label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Follow-up
        <input
          type="datetime-local"
          name="followUp"
          value={followUp}
          onInput={(e) => setFollowUp(e.currentTarget.value)}
        />
      </label>
      <div class="toolbar">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save state'}
        </button>
        {followUp && (
          <button type="button" class="link" onClick={() => setFollowUp('')}>
            Clear follow-up
          </button>
        )}
      </div>
      <p class="hint">
        A follow-up fires (thread.follow-up-due) once, when it passes while the thread still awaits a reply. Mail that
        arrives in the thread sets it open and clears the follow-up.
      </p>
    </form>
  );
}
