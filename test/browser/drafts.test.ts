import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { hasChromium, launchChromium, type Browser } from './support/chromium.js';
import { startConsoleServer, type ConsoleServer } from './support/console-server.js';

// The Drafts folder of the console (docs/console.md, "Drafts"): a draft an agent prepares through
// the API appears live in the folder with its count, opens in the compose form filled, is sent
// from there (through POST /api/drafts/{draftId}/send) and leaves the folder; the form saves and
// deletes drafts of its own.

let server: ConsoleServer;
let browser: Browser;
let page: Page;
let token: string;
const problems: string[] = [];

/** A call of the real API, as an agent beside the console makes it. */
async function call(method: string, apiPath: string, body?: unknown): Promise<any> {
  const r = await fetch(`${server.url}${apiPath}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const envelope = (await r.json()) as { data: any; errMsg: string | null };
  if (!r.ok) throw new Error(`${method} ${apiPath}: ${r.status} ${envelope.errMsg}`);
  return envelope.data;
}

const draftsLink = () => page.getByRole('navigation', { name: 'Folders' }).getByRole('link', { name: /^Drafts/ });

describe.skipIf(!hasChromium)('the Drafts folder in Chromium', () => {
  beforeAll(async () => {
    server = await startConsoleServer();
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 40[134]/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    const login = await fetch(`${server.url}/api/mailbox/auth/login/password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mailboxAddress: 'agent@example.test', password: 'agent-password-123' }),
    });
    token = ((await login.json()) as { data: { accessToken: string } }).data.accessToken;
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows a draft an agent made through the API, live, with the folder count', async () => {
    await page.goto(`${server.url}/`);
    await page.getByLabel('Address').fill('agent@example.test');
    await page.getByLabel('Password', { exact: true }).fill('agent-password-123');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await page.locator('.live.live').waitFor({ timeout: 15_000 });
    await expect.poll(() => draftsLink().textContent()).toMatch(/Drafts\s*0/);
    await draftsLink().click();
    await page.getByRole('heading', { name: 'Drafts' }).waitFor();
    await page.getByText('No drafts.').waitFor();
    await call('POST', '/api/drafts', {
      toAddress: 'peer@sender.example',
      subject: 'Prepared for you',
      bodyText: 'Dear peer, the order ships on Monday.',
    });
    // Live: draft.created refreshes the folder and its count without a reload.
    await page.getByRole('link', { name: 'Prepared for you' }).waitFor({ timeout: 15_000 });
    await expect.poll(() => draftsLink().textContent()).toMatch(/Drafts\s*1/);
    const row = page.locator('tr', { hasText: 'Prepared for you' });
    expect(await row.locator('.who-col').textContent()).toBe('peer@sender.example');
    expect(await row.locator('.snippet').textContent()).toBe('Dear peer, the order ships on Monday.');
  });

  it('opens the draft in the compose form, filled; Send sends it and it leaves the folder', async () => {
    await page.getByRole('link', { name: 'Prepared for you' }).click();
    await page.getByRole('heading', { name: 'Draft' }).waitFor();
    await expect.poll(() => page.getByLabel('To', { exact: true }).inputValue()).toBe('peer@sender.example');
    expect(await page.getByLabel('Subject').inputValue()).toBe('Prepared for you');
    expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe(
      'Dear peer, the order ships on Monday.',
    );
    // The person changes it before it goes.
    await page.getByLabel('Message', { exact: true }).fill('Dear peer, the order ships on Tuesday.');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('heading', { name: 'Prepared for you' }).waitFor();
    await expect.poll(() => page.locator('.body-text').textContent()).toContain('ships on Tuesday');
    await page.goto(`${server.url}/#/drafts`);
    await page.getByRole('heading', { name: 'Drafts' }).waitFor();
    await page.getByText('No drafts.').waitFor();
    await expect.poll(() => draftsLink().textContent()).toMatch(/Drafts\s*0/);
    expect((await call('GET', '/api/drafts')).totalCount).toBe(0);
    const sent = (await call('GET', '/api/messages?direction=outbound')).items;
    expect(sent.map((m: { subject: string }) => m.subject)).toContain('Prepared for you');
  });

  it('saves a draft from compose, reopens it from the folder and deletes it', async () => {
    await page.goto(`${server.url}/#/compose`);
    await page.getByRole('heading', { name: 'New message' }).waitFor();
    await page.getByLabel('To', { exact: true }).fill('later@sender.example');
    await page.getByLabel('Subject').fill('Not yet');
    await page.getByLabel('Message', { exact: true }).fill('Half a thought');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByRole('heading', { name: 'Draft' }).waitFor();
    await expect.poll(() => page.url()).toMatch(/#\/draft\/drf_/);
    const [saved] = (await call('GET', '/api/drafts')).items;
    expect(saved).toMatchObject({ toAddress: ['later@sender.example'], subject: 'Not yet', snippet: 'Half a thought' });
    await page.goto(`${server.url}/#/drafts`);
    await page.getByRole('link', { name: 'Not yet' }).click();
    await expect.poll(() => page.getByLabel('Message', { exact: true }).inputValue()).toBe('Half a thought');
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete draft' }).click();
    await page.getByRole('heading', { name: 'Drafts' }).waitFor();
    await page.getByText('No drafts.').waitFor();
    expect((await call('GET', '/api/drafts')).totalCount).toBe(0);
  });

  it('ran without a script error or a CSP violation', () => {
    expect(problems).toEqual([]);
  });
});
