import type { IncomingMessage } from 'node:http';
import { AppError } from '../../core/base/errors.js';

/** The one tool whose request may carry an attachment (base64 in the JSON). */
const LARGE_TOOL = 'upload_attachment';

/**
 * The MCP request body with a limit per tool (docs/api.md, "Per-token bounds"): every request
 * may be `smallLimit` bytes (MAX_JSON_BYTES); only a `tools/call` of upload_attachment may be up to
 * `largeLimit` (the attachment's base64 and the JSON around it). The tool is told by the bytes
 * themselves: past the small limit the body must announce upload_attachment in its first KiB, and
 * once read it must parse as one such call (duplicate keys cannot smuggle another tool in, since
 * the last key wins in JSON.parse, as in the SDK). Anything else is 413 before the body is read
 * further, so eight 34 MB list_messages calls cost no more than eight small ones.
 */
export async function readMcpBody(req: IncomingMessage, smallLimit: number, largeLimit: number): Promise<Buffer> {
  const head = await readUpTo(req, smallLimit);
  if (head.ended) return head.body;
  const start = head.body.subarray(0, 1024).toString('latin1');
  if (!/"method"\s*:\s*"tools\/call"/.test(start) || !new RegExp(`"name"\\s*:\\s*"${LARGE_TOOL}"`).test(start))
    throw tooLarge(`An MCP request other than ${LARGE_TOOL} may be at most ${smallLimit} bytes.`);
  const rest = await readUpTo(req, largeLimit - head.body.length);
  if (!rest.ended) throw tooLarge(`An ${LARGE_TOOL} request may be at most ${largeLimit} bytes.`);
  const body = Buffer.concat([head.body, rest.body]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new AppError('VALIDATION_FAILED', 'The MCP request is not valid JSON.');
  }
  const call = parsed as { method?: unknown; params?: { name?: unknown } } | null;
  if (!call || Array.isArray(call) || call.method !== 'tools/call' || call.params?.name !== LARGE_TOOL)
    throw tooLarge(`An MCP request other than ${LARGE_TOOL} may be at most ${smallLimit} bytes.`);
  return body;
}

const tooLarge = (detail: string) => new AppError('PAYLOAD_TOO_LARGE', detail);

/**
 * Reads until the end or until more than `limit` bytes arrived (then pauses the stream, which
 * stays unread: the caller refuses or reads on). `keep` caps what is kept of a refused read.
 */
function readUpTo(req: IncomingMessage, limit: number): Promise<{ body: Buffer; ended: boolean }> {
  if (req.readableEnded) return Promise.resolve({ body: Buffer.alloc(0), ended: true });
  const chunks: Buffer[] = [];
  let size = 0;
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
      if (size > limit) {
        cleanup();
        req.pause();
        resolve({ body: Buffer.concat(chunks), ended: false });
      }
    };
    const onEnd = () => {
      cleanup();
      resolve({ body: Buffer.concat(chunks), ended: true });
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.resume();
  });
}
