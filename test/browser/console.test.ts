import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { hasChromium, launchChromium, type Browser } from './support/chromium.js';
import { startConsoleServer, type ConsoleServer } from './support/console-server.js';
import { mailFromOutside } from './support/mail.js';

// The "done": sign in with the quick-start password, watch a mail arrive, answer it, manage
// tokens; with the domain token, the domain's mailboxes. SCREENSHOTS=1 refreshes docs/screenshots/.
const SHOTS = process.env.SCREENSHOTS === '1' ? path.resolve(import.meta.dirname, '../../docs/screenshots') : null;
const shot = async (page: Page, name: string) => {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
};

let server: ConsoleServer;
let browser: Browser;
let page: Page;
const problems: string[] = [];
const subject = `Hello from outside ${Date.now()}`;

describe.skipIf(!hasChromium)('web console in Chromium', () => {
  beforeAll(async () => {
    server = await startConsoleServer();
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 40[134]/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('answers / with the console under a strict CSP, hashed assets immutable, the page revalidated', async () => {
    const index = await fetch(`${server.url}/`);
    expect(index.status).toBe(200);
    const csp = index.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*(unsafe|\*|https?:)/);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const html = await index.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    expect(html).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/); // no CDN
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const js = await fetch(`${server.url}${asset}`);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    const again = await fetch(`${server.url}/`, { headers: { 'if-none-match': index.headers.get('etag')! } });
    expect(again.status).toBe(304);
    expect((await fetch(`${server.url}/assets/nothing-here.js`)).status).toBe(404);
  });

  it('refuses a pasted non-token and a wrong password in plain words', async () => {
    await page.goto(`${server.url}/`);
    await shot(page, 'sign-in');
    await page.getByLabel('Token (mbxm_… or mbxd_…)').fill('hunter2');
    await page.getByRole('button', { name: 'Use token' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('tokens start with mbxm_');
    await page.getByLabel('Address').fill('agent@example.test');
    await page.getByLabel('Password', { exact: true }).fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Address or password is wrong');
    // The server's words, not a guess about a token the form never sent.
    expect(await page.getByRole('alert').textContent()).not.toMatch(/not signed in|token/i);
  });

  it('signs in with the quick-start password; the token stays out of the URL', async () => {
    await page.getByLabel('Password', { exact: true }).fill('agent-password-123');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'agent@example.test' }).waitFor();
    await page.locator('.live.live').waitFor({ timeout: 15_000 });
    expect(page.url()).not.toMatch(/mbx[md]_/);
    const stored = await page.evaluate(() => sessionStorage.getItem('mailbox-console.session') ?? '');
    expect(stored).toMatch(/"token":"mbxm_/);
  });

  it('shows a mail sent over SMTP as it arrives, without reloading the page', async () => {
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 42));
    await mailFromOutside(server.ports.mx, 'agent@example.test', subject, {
      text: 'Could you confirm the order?',
    });
    await page.getByRole('link', { name: subject }).waitFor({ timeout: 15_000 });
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(42);
    await shot(page, 'inbox');
  });

  it('opens the message and replies to it', async () => {
    await page.getByRole('link', { name: subject }).click();
    await page.getByRole('heading', { name: subject }).waitFor();
    await expect.poll(() => page.locator('.body-text').textContent()).toContain('Could you confirm the order?');
    await shot(page, 'message');
    await page.keyboard.press('r'); // keyboard: r replies
    await page.getByRole('heading', { name: 'Reply' }).waitFor();
    await page.getByLabel('Message').fill('Confirmed, thank you.');
    await page.getByLabel('Attachments').setInputFiles({
      name: 'receipt.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('order 42\n'),
    });
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('heading', { name: `Re: ${subject}` }).waitFor();
    await page.getByRole('button', { name: 'receipt.txt' }).waitFor();
    // The reply is in the sent mail and in the thread.
    await page.goto(`${server.url}/#/inbox`);
    await page.getByLabel('Show').selectOption('outbound');
    await page.getByRole('link', { name: `Re: ${subject}` }).waitFor();
  });

  it('creates a token with chosen scopes and reveals it again', async () => {
    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.getByLabel('Name').fill('reader-for-ci');
    await page.getByRole('button', { name: 'Create token' }).click();
    const plaintext = page.getByLabel('Token plaintext');
    await plaintext.waitFor();
    const created = await plaintext.inputValue();
    expect(created).toMatch(/^mbxm_[A-Za-z0-9]{38}$/);
    // It works, with exactly the scope asked for: reading yes, sending no.
    const list = await fetch(`${server.url}/api/messages?limit=1`, { headers: { authorization: `Bearer ${created}` } });
    expect(list.status).toBe(200);
    await page.getByRole('button', { name: 'Hide' }).click();
    const row = page.locator('tr', { hasText: 'reader-for-ci' });
    await row.getByRole('button', { name: 'Reveal' }).click();
    expect(await page.getByLabel('Token plaintext').inputValue()).toBe(created);
    await shot(page, 'tokens');
    await row.getByRole('button', { name: 'Disable' }).click();
    await row.getByText('disabled').waitFor();
    const refused = await fetch(`${server.url}/api/messages?limit=1`, {
      headers: { authorization: `Bearer ${created}` },
    });
    expect(refused.status).toBe(401);
  });

  it('with the domain token: lists the mailboxes, creates one and sets its password', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token (mbxm_… or mbxd_…)').fill(server.domainToken());
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.getByRole('heading', { name: 'Domain mailboxes' }).waitFor();
    await page.getByRole('cell', { name: 'agent@example.test' }).waitFor();
    await page.getByLabel('Address or local part').fill('ops');
    await page.getByLabel('Display name').fill('Operations');
    await page.getByRole('button', { name: 'Create mailbox' }).click();
    await page.getByRole('cell', { name: 'ops@example.test' }).waitFor();
    await page.locator('tr', { hasText: 'ops@example.test' }).getByRole('button', { name: 'Set password' }).click();
    await page.getByLabel(/New password for ops@example.test/).fill('ops-password-123');
    await page.getByRole('button', { name: 'Save password' }).click();
    await page.getByRole('status').filter({ hasText: 'Password of ops@example.test set.' }).waitFor();
    await shot(page, 'domain');
    const login = await fetch(`${server.url}/api/mailbox/auth/login/password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mailboxAddress: 'ops@example.test', password: 'ops-password-123' }),
    });
    expect(login.status).toBe(200);
    // A domain token opens a mailbox's inbox too.
    await page.locator('tr', { hasText: 'agent@example.test' }).getByRole('button', { name: 'Open inbox' }).click();
    await page.getByRole('link', { name: subject, exact: true }).waitFor();
  });

  // Scalar's bundle is 4 MB of JavaScript: on a loaded machine its first render takes a while.
  it(
    'serves the API reference from the bundled Scalar, with nothing fetched elsewhere',
    { timeout: 150_000 },
    async () => {
      const docs = await browser.context.newPage();
      const elsewhere: string[] = [];
      docs.on('request', (r) => {
        if (!r.url().startsWith(server.url) && !r.url().startsWith('data:')) elsewhere.push(r.url());
      });
      const violations: string[] = [];
      docs.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
      });
      await docs.goto(`${server.url}/api/docs`);
      // The title, then a tag group built from the document's tags (operations render inside them).
      await docs.getByRole('heading', { name: 'mailbox-service' }).first().waitFor({ timeout: 120_000 });
      await docs.getByText('Sending', { exact: true }).first().waitFor({ timeout: 60_000 });
      await shot(docs, 'api-docs');
      expect(elsewhere).toEqual([]);
      expect(violations).toEqual([]);
      await docs.close();
    },
  );

  it('ran without a script error or a CSP violation', () => {
    expect(problems).toEqual([]);
  });
});
