import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { hasChromium, launchChromium, type Browser } from './support/chromium.js';
import { startConsoleServer, type ConsoleServer } from './support/console-server.js';

// An approver who is not signed in opens the link of the mail a held send brought them, reads the
// held message as text and approves it; the message then leaves, and the link is spent.

let server: ConsoleServer;
let browser: Browser;
let page: Page;
const problems: string[] = [];
const subject = `Contract draft ${Date.now()}`;
// Markup in the agent's text must reach the approver as text, never as elements.
const HOSTILE = 'Please sign. <img src=x onerror="document.title=\'owned\'"><b>urgent</b>';

async function call(token: string, method: string, apiPath: string, body?: unknown): Promise<any> {
  const r = await fetch(`${server.url}${apiPath}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const envelope = (await r.json()) as { data: any; errMsg: string | null };
  if (!r.ok) throw new Error(`${method} ${apiPath}: ${r.status} ${envelope.errMsg}`);
  return envelope.data;
}

async function until<T>(probe: () => Promise<T | undefined>, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

let human: { token: string };
let reader: { token: string };
let credential: string;
let heldId: string;

describe.skipIf(!hasChromium)('approval link page in Chromium', () => {
  beforeAll(async () => {
    server = await startConsoleServer();
    const domain = server.domainToken();
    const mk = async (local: string) => {
      const d = await call(domain, 'POST', '/api/mailboxes', { address: `${local}@example.test`, displayName: local });
      return { token: d.initialAccessToken as string, mailboxId: d.mailbox.mailboxId as string };
    };
    human = await mk('approver');
    reader = await mk('reader');
    const login = await fetch(`${server.url}/api/mailbox/auth/login/password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mailboxAddress: 'agent@example.test', password: 'agent-password-123' }),
    });
    const agent = ((await login.json()) as { data: { accessToken: string } }).data.accessToken;
    const { mailboxId } = await call(agent, 'GET', '/api/mailbox/policy');
    await call(domain, 'PUT', `/api/domain/mailboxes/${mailboxId}/policy`, {
      approval: 'all',
      approverAddresses: ['approver@example.test'],
    });
    const sent = await call(agent, 'POST', '/api/messages/send', {
      toAddress: 'reader@example.test',
      subject,
      bodyText: HOSTILE,
    });
    expect(sent.status).toBe('pending_approval');
    heldId = sent.messageId;
    const notice = await until(async () => {
      const list = await call(human.token, 'GET', '/api/messages?limit=20');
      return (list.items as any[]).find((m) => m.subject === `Approval needed: ${subject}`);
    }, 'the notice in the approver mailbox');
    const detail = await call(human.token, 'GET', `/api/messages/${notice.messageId}`);
    credential = /#\/approve\/(\S+)/.exec(detail.bodyText as string)![1]!;

    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
  }, 400_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows the held message as text without signing in, and takes the credential out of the address bar', async () => {
    await page.goto(`${server.url}/#/approve/${credential}`);
    await page.getByRole('heading', { name: subject }).waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('.body-text').textContent()).toBe(HOSTILE);
    expect(await page.locator('.body-text img, .body-text b').count()).toBe(0);
    expect(await page.title()).not.toBe('owned');
    const text = (await page.locator('.held-card').textContent()) ?? '';
    expect(text).toContain('reader@example.test');
    expect(text).toContain('approval:all');
    expect(text).toContain('approver@example.test');
    expect(page.url()).not.toContain(credential);
    expect(page.url()).toMatch(/#\/approve$/);
    // No session was made or needed.
    expect(await page.evaluate(() => sessionStorage.getItem('mailbox-console.session'))).toBeNull();
  });

  it('approves with a reason: the message leaves, audited in the approver’s name', async () => {
    await page.getByLabel(/Reason/).fill('checked the figures');
    await page.getByRole('button', { name: 'Approve and send' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Approved: the message is on its way.');
    expect(await page.getByRole('button', { name: 'Approve and send' }).count()).toBe(0);
    await until(async () => {
      const list = await call(reader.token, 'GET', '/api/messages?limit=20');
      return (list.items as any[]).find((m) => m.subject === subject);
    }, 'the approved message at its recipient');
    const audit = await call(server.domainToken(), 'GET', '/api/domain/audit?channel=approval-link');
    expect((audit.items as any[]).find((e) => e.messageId === heldId)).toMatchObject({
      decision: 'approved',
      actorAddress: 'approver@example.test',
      reason: 'checked the figures',
    });
  });

  it('the same link again: it says it was used and offers no decision; a reload knows no credential', async () => {
    const again = await browser.context.newPage();
    await again.goto(`${server.url}/#/approve/${credential}`);
    await expect.poll(() => again.getByRole('alert').textContent()).toContain('already used');
    expect(await again.getByRole('button', { name: 'Approve and send' }).count()).toBe(0);
    await again.reload();
    await expect.poll(() => again.getByRole('alert').textContent()).toContain('Open the link from your mail again');
    await again.close();
    expect(problems).toEqual([]);
  });
});
