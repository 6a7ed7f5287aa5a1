import { useEffect, useRef } from 'preact/hooks';

/** Every key of the console, where it works. `?` opens this list, Escape closes it. */
export const KEYS: { key: string; what: string; where: string }[] = [
  { key: '?', what: 'show or hide this list', where: 'everywhere' },
  { key: 'j / k', what: 'next / previous message', where: 'folders' },
  { key: 'Enter or o', what: 'open the message', where: 'folders' },
  { key: 'x', what: 'select the message', where: 'folders' },
  { key: '/', what: 'search', where: 'folders' },
  { key: 'c', what: 'compose', where: 'folders' },
  { key: 'r', what: 'reply', where: 'a message' },
  { key: 'a', what: 'reply all', where: 'a message' },
  { key: 'f', what: 'forward', where: 'a message' },
  { key: 'u', what: 'back to the folder', where: 'a message' },
  { key: 'Escape', what: 'close this list', where: 'everywhere' },
];

export function KeyHelp(props: { onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  return (
    <dialog ref={dialog} class="key-help" aria-labelledby="keys-title" onClose={props.onClose}>
      <h2 id="keys-title">Keyboard keys</h2>
      <table>
        <tbody>
          {KEYS.map((k) => (
            <tr key={k.key}>
              <th scope="row">
                <kbd>{k.key}</kbd>
              </th>
              <td>{k.what}</td>
              <td class="meta">{k.where}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <button onClick={props.onClose}>Close</button>
    </dialog>
  );
}
