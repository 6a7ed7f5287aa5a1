import type { Locator, Page } from 'playwright-core';

/**
 * Holds back the page's requests that `matches` until `until` is visible, then lets them through:
 * an older load's answer arrives after a newer one's. `landed()` resolves once the first of them
 * has reached the page and two frames have passed (its render, had it been applied); the page's
 * routes are gone then.
 */
export async function answerLate(page: Page, matches: (url: URL) => boolean, until: Locator) {
  await page.route(matches, async (route) => {
    await until.waitFor();
    await route.continue();
  });
  const answer = page.waitForResponse((r) => matches(new URL(r.url())));
  return {
    async landed(): Promise<void> {
      await (await answer).finished();
      // Any later request it matched (a live event's refresh) may still be in its handler.
      await page.unrouteAll({ behavior: 'wait' });
      await page.evaluate(() => {
        const frame = (globalThis as unknown as { requestAnimationFrame(cb: () => void): void }).requestAnimationFrame;
        return new Promise<void>((r) => frame(() => frame(r)));
      });
    },
  };
}
