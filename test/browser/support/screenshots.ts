import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

/** With SCREENSHOTS=1 the browser tests refresh docs/screenshots/ (docs/console.md); otherwise nothing. */
const SHOTS = process.env.SCREENSHOTS === '1' ? path.resolve(import.meta.dirname, '../../../docs/screenshots') : null;

export async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}
