import http from 'node:http';

// A client with its own source address on loopback (127.0.0.2, 127.0.0.3, ...): Linux routes all
// of 127.0.0.0/8 to lo, so a test can be several clients as the server counts them.

export interface BoundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  ms: number;
}

export interface BoundClient {
  request(
    method: string,
    url: string,
    o?: { headers?: Record<string, string>; json?: unknown },
  ): Promise<BoundResponse>;
  close(): void;
}

/** HTTP/1.1 with keep-alive from `localAddress` (node:http; fetch cannot choose its source address). */
export function boundClient(localAddress: string): BoundClient {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  return {
    request(method, url, o = {}) {
      const body = o.json === undefined ? undefined : Buffer.from(JSON.stringify(o.json));
      const headers: Record<string, string> = {
        ...o.headers,
        ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}),
      };
      const t0 = performance.now();
      return new Promise((resolve, reject) => {
        const req = http.request(url, { method, headers, agent, localAddress }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : null;
            } catch {
              /* not JSON */
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, ms: performance.now() - t0 });
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
      });
    },
    close: () => agent.destroy(),
  };
}

/** The p-th percentile (0..100) by nearest rank; NaN for no samples. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
