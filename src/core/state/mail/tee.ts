import { PassThrough, type Readable } from 'node:stream';

/**
 * Feeds one stream to several consumers at their common pace (the store and the parser read a
 * message once, as it arrives). A source error fails every branch; a branch whose consumer gave
 * up is dropped, and once none is left the source is drained, so the sender never stalls.
 *
 * Written out rather than with `pipe`: a branch destroyed while the source waited for its
 * 'drain' (the verifier stops after the header) must release the source, and with several
 * piped destinations Node's pipe could leave it paused (seen with a message switched from
 * held to streamed, heldIfSmall).
 */
export function tee(source: Readable, count: number): PassThrough[] {
  const branches = Array.from({ length: count }, () => new PassThrough());
  const open = new Set(branches);
  const full = new Set<PassThrough>();
  const release = (branch: PassThrough) => {
    full.delete(branch);
    if (full.size === 0) source.resume(); // with no branch left, this drains the source
  };
  for (const branch of branches) {
    // A consumer may attach after an await (a store creating its directory first); the error
    // stays on the branch (`errored`) for it, and must not be an unhandled 'error' meanwhile.
    branch.on('error', () => undefined);
    branch.on('drain', () => release(branch));
    branch.once('close', () => {
      open.delete(branch);
      release(branch);
    });
  }
  source.on('data', (chunk: Buffer) => {
    for (const branch of open) if (!branch.destroyed && !branch.write(chunk)) full.add(branch);
    if (full.size > 0) source.pause();
  });
  source.once('end', () => {
    for (const branch of open) branch.end();
  });
  source.once('error', (err) => {
    for (const branch of branches) branch.destroy(err);
  });
  return branches;
}
