import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Router from '@koa/router';
import type { Context } from 'koa';
import { CONSOLE_CSP, DOCS_CSP, securityHeaders } from './security-headers.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
  /** Hashed names (assets/index-3f9a….js) never change: a year, immutable. The rest: revalidate. */
  cache: string;
}

/** `dist/web` of this checkout or image: found from this file, so it works from src/ (tsx) and dist/src/. */
export function defaultWebDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return path.join(dir, 'dist', 'web');
}

/**
 * Every file of the built console, read once at start: only names present at build time can be
 * served (no path from a request ever reaches the file system), and a request costs no disk I/O.
 */
function loadSite(webDir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else {
        const rel = '/' + path.relative(webDir, full).split(path.sep).join('/');
        const body = readFileSync(full);
        files.set(rel, {
          body,
          type: TYPES[path.extname(name)] ?? 'application/octet-stream',
          etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
          cache: rel.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
        });
      }
    }
  };
  if (existsSync(webDir)) walk(webDir);
  return files;
}

/**
 * The web console at `/` and the API reference at `/api/docs` (api role). Both are static builds
 * (web/, `make build`); the console talks to the same /api routes and Socket.IO hub as any client.
 */
export function createConsoleRouter(webDir = defaultWebDir()): Router {
  const site = loadSite(webDir);
  const router = new Router();
  const send = (ctx: Context, file: StaticFile | undefined, csp: string) => {
    securityHeaders(ctx, csp);
    if (!file) {
      ctx.status = 503;
      ctx.type = 'text/plain; charset=utf-8';
      ctx.set('Cache-Control', 'no-store');
      ctx.body = 'The web console is not built in this installation: run `make build` (it runs `vite build`).\n';
      return;
    }
    ctx.set('Cache-Control', file.cache);
    ctx.set('ETag', file.etag);
    ctx.type = file.type;
    if (ctx.get('if-none-match') === file.etag) {
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    ctx.body = file.body;
  };
  router.get('/', (ctx) => send(ctx, site.get('/index.html'), CONSOLE_CSP));
  router.get('/index.html', (ctx) => ctx.redirect('/'));
  router.get('/assets/:name', (ctx) => {
    const file = site.get(`/assets/${ctx.params.name}`);
    if (!file) return; // falls through to the envelope's 404
    send(ctx, file, CONSOLE_CSP);
  });
  router.get('/api/docs', (ctx) => send(ctx, site.get('/api-docs/index.html'), DOCS_CSP));
  router.get('/api/docs/:name', (ctx) => {
    const file = site.get(`/api-docs/${ctx.params.name}`);
    if (!file || ctx.params.name === 'index.html') return;
    send(ctx, file, DOCS_CSP);
  });
  return router;
}
