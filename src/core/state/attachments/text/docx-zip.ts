/**
 * Runs in the extractor process (text-extractor.ts), before mammoth sees a byte: a DOCX is a zip,
 * and one entry of a few MB can inflate to gigabytes. Every entry's declared inflated size and
 * compression ratio are checked from the central directory, then the entries mammoth reads are
 * inflated with yauzl under a running count (a declared size that lies is caught as the bytes
 * arrive). mammoth gets a stored (uncompressed) zip of exactly those checked bytes, so it never
 * inflates anything itself. Imports only libraries (it loads the same from dist/ and the sources).
 */
import yauzl from 'yauzl';
import { zipSync } from 'fflate';

export interface ZipLimits {
  /** Inflated bytes of one entry, and of all the entries read, at most. */
  maxInflatedBytes: number;
  /** Inflated / compressed size of an entry at most (for entries past RATIO_FLOOR). */
  maxRatio: number;
  maxEntries: number;
}

/** A refusal with its recorded reason (docs/attachment-extraction.md, "Reasons"). */
export class Refused extends Error {
  // A plain field, not a parameter property: the sources run with Node's type stripping.
  readonly reason: 'too-large-inflated' | 'compression-ratio' | 'too-many-entries';
  constructor(reason: Refused['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Small entries compress far better than any bomb can hurt: the ratio is judged past 1 MiB. */
const RATIO_FLOOR = 1024 * 1024;
/** What mammoth reads for text: the XML parts and their relationships, never media. */
const TEXT_PART = /\.(xml|rels)$/i;

/** The DOCX rebuilt as a stored zip of its checked text parts, or a Refused. */
export async function checkedDocx(bytes: Uint8Array, limits: ZipLimits): Promise<Uint8Array> {
  const zip = await yauzl.fromBufferPromise(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), {
    lazyEntries: true,
    validateEntrySizes: true,
  });
  try {
    if (zip.entryCount > limits.maxEntries)
      throw new Refused(
        'too-many-entries',
        `the file has ${zip.entryCount} zip entries (at most ${limits.maxEntries})`,
      );
    const parts: Record<string, Uint8Array> = {};
    let inflated = 0;
    for await (const entry of zip.eachEntry()) {
      const name = entry.fileName;
      if (name.endsWith('/')) continue;
      if (entry.uncompressedSize > limits.maxInflatedBytes)
        throw new Refused(
          'too-large-inflated',
          `${name} declares ${entry.uncompressedSize} bytes inflated (at most ${limits.maxInflatedBytes})`,
        );
      checkRatio(name, entry.uncompressedSize, entry.compressedSize, limits);
      if (!TEXT_PART.test(name)) continue;
      const chunks: Buffer[] = [];
      let size = 0;
      const stream = await zip.openReadStreamPromise(entry);
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          size += chunk.length;
          inflated += chunk.length;
          // yauzl stops an entry at its declared size; this bounds the total whatever is declared.
          if (size > limits.maxInflatedBytes || inflated > limits.maxInflatedBytes)
            throw new Refused('too-large-inflated', `${name} inflates past ${limits.maxInflatedBytes} bytes`);
          chunks.push(chunk);
        }
      } catch (err) {
        if (err instanceof Refused) throw err;
        // AssertByteCountStream: more bytes than the entry declared (a lying header).
        if (/too many bytes/i.test((err as Error).message))
          throw new Refused('too-large-inflated', `${name} inflates past its declared ${entry.uncompressedSize} bytes`);
        throw err;
      } finally {
        stream.destroy();
      }
      checkRatio(name, size, entry.compressedSize, limits);
      parts[name] = Buffer.concat(chunks);
    }
    return zipSync(parts, { level: 0 });
  } finally {
    zip.close();
  }
}

function checkRatio(name: string, inflated: number, compressed: number, limits: ZipLimits): void {
  if (inflated > RATIO_FLOOR && inflated / Math.max(1, compressed) > limits.maxRatio)
    throw new Refused(
      'compression-ratio',
      `${name} inflates ${Math.round(inflated / Math.max(1, compressed))}× (at most ${limits.maxRatio}×)`,
    );
}
