import DOMPurify from 'dompurify';
import { useMemo, useState } from 'preact/hooks';

/**
 * HTML mail in an iframe that can do nothing: `sandbox` without allow-scripts, allow-forms or
 * allow-same-origin (no script runs, no form submits, the frame has an opaque origin and cannot
 * read the console or its token), a Content-Security-Policy inside the frame allowing no network
 * load at all (images from data: only) until the person asks for remote images, and the markup
 * cleaned first by DOMPurify: scripts, meta refresh, base, link, frames, objects, event handlers
 * and script URLs removed, in template contents too, and no `shadowrootmode` kept, so a template
 * stays inert instead of becoming a declarative shadow root. Links open in a new tab, without
 * referrer. Tested by test/browser/hostile-mail.test.ts.
 */
const purifier = DOMPurify(window);
/** The message's own inline parts by Content-ID, as data: URLs, while one sanitize call runs. */
let inlineParts: ReadonlyMap<string, string> = new Map();
purifier.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
  // An <img src="cid:…"> names a part of the same message (RFC 2392): shown from the part itself,
  // never fetched; a cid the message does not carry stays unresolved.
  const src = node.tagName === 'IMG' ? node.getAttribute('src') : null;
  if (src && /^cid:/i.test(src)) {
    const part = inlineParts.get(decodeURIComponent(src.slice(4)).toLowerCase());
    if (part) node.setAttribute('src', part);
  }
});

const FORBID_TAGS = [
  'script',
  'meta',
  'base',
  'link',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'applet',
  'portal',
  'noscript',
];
// A form keeps no target to submit to (the sandbox and CSP refuse it too); shadowroot* are never allowed.
const FORBID_ATTR = ['action', 'formaction', 'srcdoc', 'ping', 'shadowroot', 'shadowrootmode'];

export function sanitizeMailHtml(html: string, inline: ReadonlyMap<string, string> = new Map()): string {
  inlineParts = inline;
  try {
    // WHOLE_DOCUMENT keeps the mail's <head> styles, which the frame's CSP confines.
    return purifier.sanitize(html, { WHOLE_DOCUMENT: true, FORBID_TAGS, FORBID_ATTR });
  } finally {
    inlineParts = new Map();
  }
}

export function frameDocument(html: string, remote: boolean, inline?: ReadonlyMap<string, string>): string {
  const images = remote ? 'data: https: http:' : 'data:';
  const csp = `default-src 'none'; style-src 'unsafe-inline'; img-src ${images}; font-src 'none'; form-action 'none'; base-uri 'none'`;
  return (
    `<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="${csp}">` +
    `<meta name="referrer" content="no-referrer"><meta charset="utf-8"></head><body>` +
    sanitizeMailHtml(html, inline) +
    '</body></html>'
  );
}

/** `inline`: the message's image parts by lower-cased Content-ID, as data: URLs (the frame loads nothing else). */
export function MailFrame(props: { html: string; inline?: ReadonlyMap<string, string> }) {
  const [remote, setRemote] = useState(false);
  const srcdoc = useMemo(() => frameDocument(props.html, remote, props.inline), [props.html, remote, props.inline]);
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
