import type { Attachment } from '../types';

/** The uploads a draft holds (each can be removed) and the file picker for more. */
export function ComposeAttachments(props: {
  held: Attachment[];
  remove: (attachmentId: string) => void;
  choose: (files: File[]) => void;
  label: string;
}) {
  return (
    <>
      {props.held.length > 0 && (
        <ul class="attachments" aria-label="Attached">
          {props.held.map((a) => (
            <li key={a.attachmentId}>
              {a.filename}{' '}
              <button
                type="button"
                class="link"
                aria-label={`Remove ${a.filename}`}
                onClick={() => props.remove(a.attachmentId)}
              >
                remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <label>
        {props.label}
        <input
          name="attachments"
          type="file"
          multiple
          onChange={(e) => props.choose([...(e.currentTarget.files ?? [])])}
        />
      </label>
    </>
  );
}
