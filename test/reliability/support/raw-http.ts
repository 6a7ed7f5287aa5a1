import net from 'node:net';

/**
 * A raw HTTP/1.1 client for hostile requests that fetch refuses to send: any method, any header
 * bytes, bodies that disagree with their Content-Type or Content-Length, over-long request
 * lines. One connection per request, dropped once the response is complete. It does not ask for
 * `Connection: close`: a server that closes right after answering, before it read a body it did
 * not need, resets the connection and the reset can destroy the answer in flight (RFC 9112 §9.6),
 * which is the client's doing, not the server's.
 */
export interface RawRequest {
  method: string;
  /** The request target exactly as sent (path and query, already encoded or deliberately not). */
  target: string;
  headers: [string, string][];
  body?: Buffer;
  /** Source address of the connection (127.0.0.x), so per-address throttles stay apart. */
  localAddress?: string;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export type RawOutcome = RawResponse | { error: string };

/** Serialises a request; Host and Connection are added, Content-Length too unless given. */
export function requestBytes(req: RawRequest, port: number): Buffer {
  const names = new Set(req.headers.map(([k]) => k.toLowerCase()));
  const lines = [`${req.method} ${req.target} HTTP/1.1`, `Host: 127.0.0.1:${port}`];
  for (const [k, v] of req.headers) lines.push(`${k}: ${v}`);
  if (req.body && !names.has('content-length') && !names.has('transfer-encoding'))
    lines.push(`Content-Length: ${req.body.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), req.body ?? Buffer.alloc(0)]);
}

/** Sends the bytes and reads the whole response (or reports why there is none). */
export function rawHttp(
  port: number,
  req: RawRequest | { bytes: Buffer; localAddress?: string },
  timeoutMs = 30_000,
): Promise<RawOutcome> {
  const bytes = 'bytes' in req ? req.bytes : requestBytes(req, port);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({
      port,
      host: '127.0.0.1',
      ...(req.localAddress ? { localAddress: req.localAddress } : {}),
    });
    let settled = false;
    const finish = (outcome: RawOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ error: `no complete response within ${timeoutMs} ms` }), timeoutMs);
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      const parsed = parseResponse(Buffer.concat(chunks));
      if (parsed) finish(parsed);
    });
    socket.on('error', (err) => {
      // A server may answer and close before reading everything we send (413 on a declared length).
      const parsed = parseResponse(Buffer.concat(chunks));
      finish(parsed ?? { error: `${(err as NodeJS.ErrnoException).code ?? err.message}` });
    });
    socket.on('close', () => {
      const parsed = parseResponse(Buffer.concat(chunks), true);
      finish(parsed ?? { error: chunks.length ? 'truncated response' : 'closed without a response' });
    });
    socket.write(bytes, () => undefined);
  });
}

/** A complete response in `buf`, or null while more is expected (`ended`: the socket closed). */
export function parseResponse(buf: Buffer, ended = false): RawResponse | null {
  const headEnd = buf.indexOf('\r\n\r\n');
  if (headEnd === -1) return null;
  const head = buf.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')?.[1]);
  if (!status) return null;
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const rest = buf.subarray(headEnd + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const body = dechunk(rest);
    return body ? { status, headers, body } : null;
  }
  if (out204(status)) return { status, headers, body: Buffer.alloc(0) };
  if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    return rest.length >= n ? { status, headers, body: rest.subarray(0, n) } : null;
  }
  return ended ? { status, headers, body: rest } : null;
}

/** Responses that never have a body (RFC 9110 §6.4.1). */
const out204 = (status: number) => status === 204 || status === 304 || status < 200;

function dechunk(buf: Buffer): Buffer | null {
  const out: Buffer[] = [];
  let i = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', i);
    if (eol === -1) return null;
    const size = parseInt(buf.subarray(i, eol).toString('latin1'), 16);
    if (Number.isNaN(size)) return null;
    if (size === 0) return Buffer.concat(out);
    if (buf.length < eol + 2 + size + 2) return null;
    out.push(buf.subarray(eol + 2, eol + 2 + size));
    i = eol + 2 + size + 2;
  }
}
