import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { table } from '../lib/measure.js';
import { serve, stopProcess } from '../lib/processes.js';
import { scratchDatabase, seedMailboxes } from '../lib/scratch.js';
import { seedMessages } from '../http/seed.js';

// bench/console: the web console's figures. Bundle size (gzip) of dist/web; time to
// interactive of the inbox of a 10 000-message mailbox (token pasted → first page rendered and the
// live connection up), median of RUNS cold loads in a fresh Chromium profile; the browser's JS
// heap per open console (CDP Performance.getMetrics), after load and after opening 20 messages.
const MESSAGES = Number(process.env.BENCH_CONSOLE_MESSAGES ?? 10_000);
const RUNS = Number(process.env.BENCH_CONSOLE_RUNS ?? 5);
const PORT = 18090;
const root = path.resolve(import.meta.dirname, import.meta.url.endsWith('.js') ? '../../..' : '../..');

function bundle(): Record<string, string | number> {
  const dir = path.join(root, 'dist/web/assets');
  const sizes = readdirSync(dir).map((f) => {
    const body = readFileSync(path.join(dir, f));
    return { f, raw: body.length, gz: gzipSync(body, { level: 9 }).length };
  });
  const sum = (ext: string, k: 'raw' | 'gz') =>
    sizes.filter((s) => s.f.endsWith(ext)).reduce((a, s) => a + s[k], 0) / 1024;
  return {
    figure: 'console bundle (JS + CSS, gzip)',
    value: `${(sum('.js', 'gz') + sum('.css', 'gz')).toFixed(1)} KiB`,
    detail: `JS ${sum('.js', 'raw').toFixed(1)} KiB (${sum('.js', 'gz').toFixed(1)} gz), CSS ${sum('.css', 'raw').toFixed(1)} KiB (${sum('.css', 'gz').toFixed(1)} gz)`,
  };
}

async function main(): Promise<void> {
  const db = await scratchDatabase('mbx_bench_console');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-bench-console-'));
  const env = {
    DATABASE_URL: db.url,
    MAILBOX_DATA_DIR: dataDir,
    MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
  };
  const [box] = await seedMailboxes(env, 'bench.test', ['console']);
  await seedMessages(db.url, box!.mailboxId, box!.address, MESSAGES);
  const server = await serve('api,realtime', PORT, env);
  const base = `http://127.0.0.1:${PORT}`;
  const rows: Array<Record<string, string | number>> = [bundle()];
  try {
    const tti: number[] = [];
    let heap: { loaded: number; after20: number } | null = null;
    for (let run = 0; run < RUNS; run++) {
      const profile = mkdtempSync(path.join(tmpdir(), 'mbx-bench-chromium-'));
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
      });
      try {
        const page = await context.newPage();
        // The token goes into session storage before the first load, as a signed-in tab has it.
        await page.addInitScript((token) => {
          sessionStorage.setItem(
            'mailbox-console.session',
            JSON.stringify({ token, kind: 'mailbox', mailboxAddress: 'console@bench.test' }),
          );
        }, box!.token);
        const t0 = Date.now();
        await page.goto(`${base}/#/inbox`);
        await page.locator('table.messages tbody tr').nth(49).waitFor();
        await page.locator('.live.live').waitFor();
        tti.push(Date.now() - t0);
        if (run === 0) {
          const cdp = await context.newCDPSession(page);
          await cdp.send('Performance.enable');
          const used = async () => {
            await cdp.send('HeapProfiler.collectGarbage');
            const { metrics } = await cdp.send('Performance.getMetrics');
            return metrics.find((m) => m.name === 'JSHeapUsedSize')!.value / 1024 / 1024;
          };
          const loaded = await used();
          for (let i = 0; i < 20; i++) {
            await page.locator('table.messages tbody tr a').nth(i).click();
            await page.locator('.body-text').waitFor();
            await page.goBack();
            await page.locator('table.messages tbody tr').nth(49).waitFor();
          }
          heap = { loaded, after20: await used() };
        }
      } finally {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      }
    }
    tti.sort((a, b) => a - b);
    rows.push({
      figure: `time to interactive, inbox of ${MESSAGES} messages`,
      value: `${tti[Math.floor(tti.length / 2)]} ms`,
      detail: `median of ${RUNS} cold loads (min ${tti[0]}, max ${tti.at(-1)}): page, bundle, first 50 rows, socket live`,
    });
    rows.push({
      figure: 'JS heap per open console',
      value: `${heap!.loaded.toFixed(1)} MiB`,
      detail: `after GC, inbox loaded; ${heap!.after20.toFixed(1)} MiB after opening 20 messages`,
    });
    console.log(table(rows));
  } finally {
    await stopProcess(server);
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
