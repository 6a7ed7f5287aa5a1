import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { hasChromium, launchChromium, watchedPage, type Browser } from './support/chromium.js';
import { startConsoleServer, type ConsoleServer } from './support/console-server.js';
import { mailFromOutside } from './support/mail.js';
import { agentToken, apiCall, upload, type Doc } from './support/api.js';
import { shot } from './support/screenshots.js';

// docs/console.md, "Reply all and Forward" and "Conversations": a person answers everyone on a
// mail, forwards one with its attachments, reads the conversation with its workflow state, sets
// the state and the follow-up, and finds the conversations by state from the folder list; signed
// in with the mailbox's password, on a real `mailbox serve`.

let server: ConsoleServer;
let browser: Browser;
let page: Page;
let token: string;
const problems: string[] = [];
const call = (method: string, apiPath: string, body?: unknown) => apiCall(server, token, method, apiPath, body);
const folders = () => page.getByRole('navigation', { name: 'Folders' });
const width = () => page.evaluate(() => (globalThis as unknown as Doc).document.documentElement.scrollWidth);

describe.skipIf(!hasChromium)('reply all, forward and conversations in Chromium', () => {
  beforeAll(async () => {
    server = await startConsoleServer();
    browser = await launchChromium();
    page = await watchedPage(browser, problems);
    token = await agentToken(server);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('reply all (key a) shows who it goes to and sends through replyAll: the Cc the server adds', async () => {
    await page.goto(`${server.url}/`);
    await page.getByLabel('Address').fill('agent@example.test');
    await page.getByLabel('Password', { exact: true }).fill('agent-password-123');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await page.locator('.live.live').waitFor({ timeout: 15_000 });
    await mailFromOutside(server.ports.mx, 'agent@example.test', 'Project kickoff', {
      text: 'Shall we start on Monday?\nThe team is ready.',
      alsoTo: ['carol@sender.example'],
      cc: ['dave@sender.example'],
    });
    await page.getByRole('link', { name: 'Project kickoff' }).click({ timeout: 15_000 });
    await page.getByRole('heading', { name: 'Project kickoff' }).waitFor();
    await page.getByRole('button', { name: 'Reply all' }).waitFor();
    await page.keyboard.press('a');
    await page.getByRole('heading', { name: 'Reply all' }).waitFor();
    await expect.poll(() => page.getByLabel('To', { exact: true }).inputValue()).toBe('peer@sender.example');
    // Who it goes to: the sender, and everyone else the original was addressed to, not this mailbox.
    const goesTo = page.getByRole('group', { name: 'Goes to' });
    await expect.poll(() => goesTo.textContent()).toContain('Cc: carol@sender.example, dave@sender.example');
    expect(await goesTo.textContent()).not.toContain('agent@example.test');
    expect(await page.getByLabel('Subject').inputValue()).toBe('Re: Project kickoff');
    const quoted = await page.getByLabel('Message', { exact: true }).inputValue();
    expect(quoted).toMatch(/wrote:\n> Shall we start on Monday\?/);
    await page.getByLabel('Cc', { exact: true }).fill('erin@sender.example');
    await expect.poll(() => goesTo.textContent()).toContain('dave@sender.example, erin@sender.example');
    await page.getByLabel('Message', { exact: true }).fill(`Monday it is.\n\n${quoted.trim()}`);
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('heading', { name: 'Re: Project kickoff' }).waitFor();
    const sentId = decodeURIComponent(page.url().split('/').pop()!);
    const sent = await call('GET', `/api/messages/${sentId}`);
    expect(sent.toAddresses).toEqual(['peer@sender.example']);
    expect(sent.ccAddresses).toEqual(['carol@sender.example', 'dave@sender.example', 'erin@sender.example']);
    expect(sent.bodyText).toMatch(/^Monday it is\./);
  });

  it('forward (key f) sends the original below a note, with its attachments; the form says so', async () => {
    const attachment = await upload(server, token, 'plan.txt', 'text/plain', Buffer.from('step 1, step 2\n'));
    const original = await call('POST', '/api/messages/send', {
      toAddress: ['peer@sender.example'],
      subject: 'Re: The plan',
      bodyText: 'Here is the plan.',
      attachmentIds: [attachment],
    });
    await page.goto(`${server.url}/#/message/${original.messageId}`);
    await page.getByRole('heading', { name: 'Re: The plan' }).waitFor();
    await page.keyboard.press('f');
    await page.getByRole('heading', { name: 'Forward' }).waitFor();
    // The server's default subject: reply prefixes removed, one Fwd:.
    await expect.poll(() => page.getByLabel('Subject').inputValue()).toBe('Fwd: The plan');
    expect(await page.getByLabel('To', { exact: true }).inputValue()).toBe('');
    expect(await page.getByLabel('Attachments that go along').textContent()).toContain('plan.txt');
    await page.getByLabel('To', { exact: true }).fill('boss@sender.example');
    const goesTo = page.getByRole('group', { name: 'Goes to' });
    await expect.poll(() => goesTo.textContent()).toContain('Goes to: boss@sender.example');
    await page.getByLabel(/^Note/).fill('For your review.');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('heading', { name: 'Fwd: The plan' }).waitFor();
    await page.getByRole('button', { name: 'plan.txt' }).waitFor();
    const id = decodeURIComponent(page.url().split('/').pop()!);
    const fwd = await call('GET', `/api/messages/${id}`);
    expect(fwd.toAddresses).toEqual(['boss@sender.example']);
    expect(fwd.bodyText).toMatch(/^For your review\.\n\n---------- Forwarded message ---------/);
    expect(fwd.bodyText).toContain('Here is the plan.');
    expect(fwd.attachments.map((a: { filename: string }) => a.filename)).toEqual(['plan.txt']);
    // A new conversation, not the original's.
    expect(fwd.threadId).not.toBe(original.threadId);
    // The keys are listed on ?.
    await page.keyboard.press('?');
    const keys = page.getByRole('dialog');
    await expect.poll(() => keys.textContent()).toContain('reply all');
    expect(await keys.textContent()).toContain('forward');
    await page.keyboard.press('Escape');
    await keys.waitFor({ state: 'hidden' });
  });

  it('the conversation view: messages in order with sender, time and snippet; its state and follow-up', async () => {
    await page.goto(`${server.url}/#/inbox`);
    await page.getByRole('link', { name: 'Project kickoff' }).click();
    // Exact: the folder list's "… conversations" links would match the word too.
    await page.getByRole('link', { name: 'Conversation', exact: true }).click();
    await page.getByRole('heading', { name: 'Project kickoff' }).waitFor();
    const items = page.getByRole('list', { name: 'Messages' }).locator('li.thread-item');
    await expect.poll(() => items.count()).toBe(2);
    // Oldest first: the arrival, then the reply all (sent by this mailbox: awaiting a reply).
    expect(await items.nth(0).textContent()).toContain('Peer');
    expect(await items.nth(1).textContent()).toContain('agent@example.test (this mailbox)');
    expect(await items.nth(0).locator('time').count()).toBe(1);
    await expect.poll(() => page.locator('.headers').textContent()).toMatch(/State\s*Awaiting reply since/);
    // The older one shows its snippet; expanded, the whole text.
    expect(await items.nth(0).locator('.snippet').textContent()).toContain('Shall we start on Monday?');
    await items.nth(0).getByRole('button', { name: 'Expand' }).click();
    await expect.poll(() => items.nth(0).locator('.body-text').textContent()).toContain('The team is ready.');

    // Handed to a person, with a follow-up tomorrow at 09:30 (the browser's time zone).
    const form = page.getByRole('form', { name: 'Thread state' });
    await form.getByLabel('State').selectOption('needs_human');
    const local = await page.evaluate(() => {
      const d = new Date(Date.now() + 86_400_000);
      d.setHours(9, 30, 0, 0);
      const pad = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T09:30`;
    });
    const followUpAtTs = await page.evaluate((v) => new Date(v).getTime(), local);
    await form.getByLabel('Follow-up').fill(local);
    await form.getByRole('button', { name: 'Save state' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved: Needs human' }).waitFor();
    await expect.poll(() => page.locator('.headers').textContent()).toMatch(/State\s*Needs human/);
    await shot(page, 'conversation');
    const threadId = decodeURIComponent(page.url().split('/').pop()!);
    const [listed] = (await call('GET', '/api/threads?state=needs_human')).items;
    expect(listed).toMatchObject({ threadId, state: 'needs_human', followUpAtTs });
    await page.goto(`${server.url}/#/inbox`);
    await expect
      .poll(() =>
        folders()
          .getByRole('link', { name: /^Needs human/ })
          .textContent(),
      )
      .toMatch(/1$/);
  });

  it('lists conversations by state from the folder list, live, with counts', async () => {
    await page.goto(`${server.url}/#/inbox`);
    await folders()
      .getByRole('link', { name: /^Needs human/ })
      .click();
    await page.getByRole('heading', { name: 'Needs human' }).waitFor();
    const row = page.locator('tr', { hasText: 'Project kickoff' });
    await row.waitFor();
    expect(await row.textContent()).toMatch(/follow-up/);
    // Set elsewhere (an agent, through the API): the list and its count follow thread.state-changed.
    const forward = (await call('GET', '/api/messages?direction=outbound')).items.find(
      (m: { subject: string }) => m.subject === 'Fwd: The plan',
    );
    await call('PUT', `/api/threads/${forward.threadId}/state`, { state: 'needs_human' });
    await page.locator('tr', { hasText: 'Fwd: The plan' }).waitFor({ timeout: 15_000 });
    await expect
      .poll(() =>
        folders()
          .getByRole('link', { name: /^Needs human/ })
          .textContent(),
      )
      .toMatch(/2$/);
    await page.getByLabel('State').selectOption('awaiting_reply');
    await page.getByRole('heading', { name: 'Awaiting reply' }).waitFor();
    await page.locator('tr', { hasText: 'Re: The plan' }).waitFor();
    await expect.poll(() => page.locator('tr', { hasText: 'Project kickoff' }).count()).toBe(0);

    // Closing one, the follow-up cleared, from its conversation view.
    await page.goto(`${server.url}/#/threads/needs_human`);
    await page.getByRole('link', { name: 'Project kickoff' }).click();
    const form = page.getByRole('form', { name: 'Thread state' });
    await expect.poll(() => form.getByLabel('Follow-up').inputValue()).not.toBe('');
    await form.getByRole('button', { name: 'Clear follow-up' }).click();
    await form.getByLabel('State').selectOption('closed');
    await form.getByRole('button', { name: 'Save state' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved: Closed' }).waitFor();
    const [closed] = (await call('GET', '/api/threads?state=closed')).items;
    expect(closed).toMatchObject({ subject: 'Project kickoff', state: 'closed', followUpAtTs: null });
    await page.goto(`${server.url}/#/threads/closed`);
    await page.locator('tr', { hasText: 'Project kickoff' }).waitFor();
    await expect
      .poll(() =>
        folders()
          .getByRole('link', { name: /^Needs human/ })
          .textContent(),
      )
      .toMatch(/1$/);
  });

  it('shows the policy read-only to a mailbox token', async () => {
    await page.getByRole('link', { name: 'Policy' }).click();
    await page.getByRole('heading', { name: 'Outbound policy of agent@example.test' }).waitFor();
    await page.getByText(/Read only: the policy is changed with a domain token/).waitFor();
    expect(await page.getByRole('button', { name: 'Add' }).count()).toBe(0);
  });

  it('is usable 390 px wide: the conversation, its form and the compose form do not scroll sideways', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server.url}/#/threads`);
    await page.getByRole('link', { name: 'Project kickoff' }).click();
    await page.getByRole('form', { name: 'Thread state' }).waitFor();
    expect(await width()).toBeLessThanOrEqual(390);
    const save = await page.getByRole('button', { name: 'Save state' }).boundingBox();
    expect(save!.x + save!.width).toBeLessThanOrEqual(390);
    await page.goto(`${server.url}/#/threads/needs_human`);
    await page.getByRole('heading', { name: 'Needs human' }).waitFor();
    expect(await width()).toBeLessThanOrEqual(390);
    await page.goto(`${server.url}/#/inbox`);
    await page.getByRole('link', { name: 'Project kickoff' }).click();
    await page.getByRole('button', { name: 'Reply all' }).click();
    await page.getByRole('group', { name: 'Goes to' }).waitFor();
    expect(await width()).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('ran without a script error or a CSP violation', () => {
    expect(problems).toEqual([]);
  });
});
