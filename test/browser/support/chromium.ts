import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; scripts/ensure-chromium.sh installs it). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM_PATH);

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A fresh profile per launch: no cache, no stored token, nothing shared between test files. */
export async function launchChromium(): Promise<Browser> {
  const profile = mkdtempSync(path.join(tmpdir(), 'mbx-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * A page of `browser` that records every script error and console error into `problems`, except
 * failed requests whose status matches `expected` (refusals the test provokes); waits fail after
 * 20 s, saying which, before the test's own timeout.
 */
export async function watchedPage(browser: Browser, problems: string[], expected = /status of 40[134]/) {
  const page = await browser.context.newPage();
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !expected.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  return page;
}
