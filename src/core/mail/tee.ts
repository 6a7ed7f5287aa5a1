import { PassThrough, type Readable } from 'node:stream';

/**
 * Feeds one stream to several consumers at their common pace (the store and the parser read a
 * message once, as it arrives). A source error fails every branch; a branch whose consumer gave
 * up is dropped, and once none is left the source is drained, so the sender never stalls.
 */
export function tee(source: Readable, count: number): PassThrough[] {
  const branches = Array.from({ length: count }, () => new PassThrough());
  let open = count;
  for (const branch of branches) {
    // A consumer may attach after an await (a store creating its directory first); the error
    // stays on the branch (`errored`) for it, and must not be an unhandled 'error' meanwhile.
    branch.on('error', () => undefined);
    branch.once('close', () => {
      if (--open === 0 && !source.readableEnded) source.resume();
    });
    source.pipe(branch);
  }
  source.once('error', (err) => {
    for (const branch of branches) branch.destroy(err);
  });
  return branches;
}
