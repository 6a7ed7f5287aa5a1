import { Readable } from 'node:stream';

/** A message held in memory (small), or what storing it as a stream returned (large). */
export type Spooled<T> = { held: Buffer } | { stored: T };

/**
 * Reads `source` into memory while it stays within `limit` bytes, so a small message can be
 * written inside the transaction that names it (one commit instead of three). Past the limit it
 * hands the bytes read so far and the rest of the stream, at the stream's own pace, to
 * `storeLarge` (the streaming blob put): a large message is never held whole.
 */
export async function spool<T>(
  source: Readable,
  limit: number,
  storeLarge: (stream: Readable) => Promise<T>,
): Promise<Spooled<T>> {
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
