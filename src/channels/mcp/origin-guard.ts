import type { Context } from 'koa';
import { AppError } from '../../core/base/errors.js';
// The same policy as the real-time hub (no Origin or same-origin pass, others only when listed).
import { OriginPolicy } from '../shared/origin-policy.js';

const ALLOW_HEADERS =
  'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-ID, traceparent';

export type OriginOutcome = 'answered' | 'continue';

/**
 * MCP Streamable HTTP, security warning: servers MUST validate Origin against DNS rebinding and
 * answer 403 when it is not allowed. Tokens travel in a header a rebound page cannot add, so this
 * is defence in depth; it runs before authentication, as the spec's 403 does not depend on it.
 * An allowed browser origin also gets the CORS headers it needs to call /mcp at all.
 */
export function createOriginGuard(
  allowList: string,
  publicBaseUrl: string | undefined,
): (ctx: Context) => OriginOutcome {
  const policy = new OriginPolicy(allowList, publicBaseUrl);
  return (ctx) => {
    const origin = ctx.get('origin') || undefined;
    if (!policy.allows(origin, ctx.get('host') || undefined)) {
      throw new AppError(
        'ORIGIN_FORBIDDEN',
        'This Origin may not use /mcp; the operator can list it in MCP_ALLOWED_ORIGINS.',
      );
    }
    if (origin) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.vary('Origin');
      ctx.set('Access-Control-Expose-Headers', 'WWW-Authenticate, traceparent');
    }
    if (ctx.method !== 'OPTIONS') return 'continue';
    // CORS preflight: carries no credentials, so it is answered before authentication.
    ctx.set('Access-Control-Allow-Methods', 'POST');
    ctx.set('Access-Control-Allow-Headers', ALLOW_HEADERS);
    ctx.set('Access-Control-Max-Age', '600');
    ctx.status = 204;
    return 'answered';
  };
}
