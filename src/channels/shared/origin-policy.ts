/**
 * Which browser origins may open the real-time connection. Tokens travel in the handshake, not
 * in cookies, so this is defence in depth against a foreign page driving a user's browser with
 * a token it somehow holds: requests without Origin (servers, CLIs) and same-origin pages are
 * allowed, other origins only when REALTIME_ALLOWED_ORIGINS lists them (or says `*`).
 */
export class OriginPolicy {
  private readonly any: boolean;
  private readonly listed: Set<string>;

  constructor(allowList: string, publicBaseUrl?: string) {
    const entries = allowList
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    this.any = entries.includes('*');
    this.listed = new Set(
      entries
        .filter((e) => e !== '*')
        .map(normalizeOrigin)
        .filter((o): o is string => o !== null),
    );
    // The public URL is by definition our own origin, even behind a proxy that rewrites Host.
    const own = publicBaseUrl ? normalizeOrigin(publicBaseUrl) : null;
    if (own) this.listed.add(own);
  }

  allows(origin: string | undefined, host: string | undefined): boolean {
    if (origin === undefined || origin === '') return true;
    if (this.any) return true;
    const normalized = normalizeOrigin(origin);
    if (normalized === null) return false; // "null" (sandboxed frames, file://) is never same-origin
    if (this.listed.has(normalized)) return true;
    return host !== undefined && new URL(normalized).host === host.toLowerCase();
  }

  /** Socket.IO's CORS setting: explicit origins get CORS headers for the polling transport. */
  get cors(): { origin: string[] | boolean } | undefined {
    if (this.any) return { origin: true };
    return this.listed.size > 0 ? { origin: [...this.listed] } : undefined;
  }
}

function normalizeOrigin(value: string): string | null {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin.toLowerCase() : null;
  } catch {
    return null;
  }
}
