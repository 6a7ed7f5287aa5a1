import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { CHROMIUM_PATH, hasChromium } from './chromium.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

function newest(dir: string): number {
  let max = 0;
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    const s = statSync(full);
    max = Math.max(max, s.isDirectory() ? newest(full) : s.mtimeMs);
  }
  return max;
}

/**
 * The browser project needs Chromium and a built console. Without Chromium the tests are skipped
 * with this one line (scripts/ensure-chromium.sh installs it where it can); a console older than
 * its sources is rebuilt, as `make build` would.
 */
export default function setup(): void {
  if (!hasChromium) {
    console.log(
      `browser tests skipped: no Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`,
    );
    return;
  }
  const built = path.join(ROOT, 'dist/web/index.html');
  if (!existsSync(built) || statSync(built).mtimeMs < newest(path.join(ROOT, 'web'))) {
    const vite = spawnSync(
      path.join(ROOT, 'node_modules/.bin/vite'),
      ['build', '--config', 'web/vite.config.ts', '--logLevel', 'warn'],
      {
        cwd: ROOT,
        stdio: 'inherit',
      },
    );
    if (vite.status !== 0) throw new Error('vite build of the console failed');
  }
}
