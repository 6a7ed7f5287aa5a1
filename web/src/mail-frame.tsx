import { useMemo, useState } from 'preact/hooks';

/**
 * HTML mail in an iframe that can do nothing: `sandbox` without allow-scripts, allow-forms or
 * allow-same-origin (no script runs, no form submits, the frame has an opaque origin and cannot
 * read the console or its token), a Content-Security-Policy inside the frame allowing no network
 * load at all (images from data: only) until the person asks for remote images, and the markup
 * cleaned first (scripts, meta refresh, base, link, frames, objects and event handlers removed).
 * Links open in a new tab, without referrer. Tested by test/browser/hostile-mail.test.ts.
 */
const STRIP = 'script, meta, base, link, iframe, frame, frameset, object, embed, applet, portal, noscript';

export function sanitizeMailHtml(html: string): string {
  const doc = new DOMParser().parseFromString(html, 'text/html'); // inert: loads and runs nothing
  for (const el of doc.querySelectorAll(STRIP)) el.remove();
  for (const el of doc.querySelectorAll('*')) {
    for (const attr of [...el.attributes]) {
      const name = attr.name.toLowerCase();
      if (name.startsWith('on') || name === 'formaction' || name === 'srcdoc' || name === 'ping')
        el.removeAttribute(attr.name);
      else if (/^\s*(javascript|vbscript|data:text\/html)/i.test(attr.value) && /href|src|action|data/.test(name))
        el.removeAttribute(attr.name);
    }
  }
  for (const form of doc.querySelectorAll('form')) form.removeAttribute('action');
  for (const a of doc.querySelectorAll('a[href]')) {
    a.setAttribute('target', '_blank');
    a.setAttribute('rel', 'noopener noreferrer');
  }
  return doc.documentElement.outerHTML;
}

export function frameDocument(html: string, remote: boolean): string {
  const images = remote ? 'data: https: http:' : 'data:';
  const csp = `default-src 'none'; style-src 'unsafe-inline'; img-src ${images}; font-src 'none'; form-action 'none'; base-uri 'none'`;
  return (
    `<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="${csp}">` +
    `<meta name="referrer" content="no-referrer"><meta charset="utf-8"></head><body>` +
    sanitizeMailHtml(html) +
    '</body></html>'
  );
}

export function MailFrame(props: { html: string }) {
  const [remote, setRemote] = useState(false);
  const srcdoc = useMemo(() => frameDocument(props.html, remote), [props.html, remote]);
  return (
    <div class="mail-frame">
      {!remote && (
        <p class="hint">
          Remote images and styles are blocked.{' '}
          <button class="link" onClick={() => setRemote(true)}>
            Load remote images
          </button>
        </p>
      )}
      <iframe
        title="Message body"
        sandbox="allow-popups allow-popups-to-escape-sandbox"
        referrerpolicy="no-referrer"
        srcdoc={srcdoc}
      />
    </div>
  );
}
