import { PassThrough, Readable } from 'node:stream';

/** A message held in memory (small), or what storing it as a stream returned (large). */
export type Spooled<T> = { held: Buffer } | { stored: T };

/**
 * Reads `source` into memory while it stays within `limit` bytes, so a small message can be
 * written inside the transaction that names it (one commit instead of three). Past the limit it
 * hands the bytes read so far and the rest of the stream, at the stream's own pace, to
 * `storeLarge` (the streaming blob put): a large message is never held whole.
 */
export async function spool<T>(
  source: Readable | Buffer,
  limit: number,
  storeLarge: (stream: Readable) => Promise<T>,
): Promise<Spooled<T>> {
  if (Buffer.isBuffer(source)) return { held: source }; // read whole already (heldIfSmall)
  const parts: Buffer[] = [];
  let size = 0;
  const it = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  for (;;) {
    const next = await it.next();
    if (next.done) return { held: parts.length === 1 ? parts[0]! : Buffer.concat(parts, size) };
    parts.push(next.value);
    size += next.value.length;
    if (size > limit) break;
  }
  async function* rest(): AsyncGenerator<Buffer> {
    try {
      yield* parts.splice(0);
      for (let next = await it.next(); !next.done; next = await it.next()) yield next.value;
    } finally {
      await it.return?.(); // a store that gave up destroys the source, so a tee drops this branch
    }
  }
  try {
    return { stored: await storeLarge(Readable.from(rest(), { objectMode: false })) };
  } catch (err) {
    source.destroy(); // also when the store gave up before reading: a tee must not wait for this branch
    throw err;
  }
}

/**
 * The whole message when `source` ends within `limit` bytes, else a stream of the bytes read so
 * far and the rest, at the source's pace. Most mail is small: held whole, it is parsed, verified
 * and stored from one buffer, without the per-chunk stream plumbing a tee and its branches cost
 * (bench/smtp, docs/performance.md). A source error before the decision rejects; after it, fails the stream.
 */
export function heldIfSmall(source: Readable, limit: number): Promise<Buffer | Readable> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      parts.push(chunk);
      size += chunk.length;
      if (size <= limit) return;
      source.pause();
      detach();
      const rest = new PassThrough();
      for (const part of parts.splice(0)) rest.write(part);
      source.once('error', (err) => rest.destroy(err));
      source.pipe(rest);
      resolve(rest);
    };
    const onEnd = () => {
      detach();
      resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size));
    };
    const onError = (err: Error) => {
      detach();
      reject(err);
    };
    const detach = () => {
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
    };
    source.on('data', onData);
    source.once('end', onEnd);
    source.once('error', onError);
  });
}
