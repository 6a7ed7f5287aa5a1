import type { Context } from 'koa';

/**
 * The console's Content-Security-Policy: scripts and styles from this origin only, no inline
 * script, no eval, fetch and WebSocket to this origin only, no plugin, no framing by other sites,
 * no form posts anywhere. Two allowances are for mail, not for the console: inline styles (mail
 * HTML is styled inline) and http(s) images, which the message frame's own, narrower policy
 * blocks until the person clicks "Load remote images" (web/src/mail-frame.tsx). The frame is an
 * about:srcdoc document, so it inherits this policy and can only narrow it.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: https: http:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "object-src 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Scalar's API reference injects its styles at run time; it fetches only /api/openapi.json. */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "form-action 'none'",
  "base-uri 'none'",
  "object-src 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function securityHeaders(ctx: Context, csp: string): void {
  ctx.set('Content-Security-Policy', csp);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
  ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
  ctx.set('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=()');
}
