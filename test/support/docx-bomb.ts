import { constants, crc32, deflateRawSync } from 'node:zlib';

/**
 * Zip bombs built in the test, the way attackers build them: a deflate stream of `times` copies
 * of one block, each compressed once and repeated as bytes (a full flush makes every copy
 * independent of what came before), so a 1.5 GB part costs ~1.5 MB and a second to build.
 */

interface ZipEntry {
  name: string;
  method: 0 | 8;
  data: Buffer;
  crc: number;
  size: number;
  /** The size the headers claim; `size` unless the test lies. */
  declaredSize?: number;
}

const stored = (name: string, text: string): ZipEntry => {
  const data = Buffer.from(text, 'utf8');
  return { name, method: 0, data, crc: crc32(data), size: data.length };
};

/** A deflated entry of `head`, `times` × `unit`, `tail`, never held inflated here. */
export function repeatedEntry(name: string, head: string, unit: string, times: number, tail: string): ZipEntry {
  const blockUnits = Math.max(1, Math.floor((1024 * 1024) / Math.max(1, unit.length)));
  const block = Buffer.from(unit.repeat(blockUnits), 'utf8');
  const flush = { finishFlush: constants.Z_FULL_FLUSH, level: 9 };
  const parts: Buffer[] = [deflateRawSync(Buffer.from(head), flush)];
  let crc = crc32(Buffer.from(head));
  let size = Buffer.byteLength(head);
  const packedBlock = deflateRawSync(block, flush);
  const whole = unit === '' ? 0 : Math.floor(times / blockUnits);
  for (let i = 0; i < whole; i++) {
    parts.push(packedBlock);
    crc = crc32(block, crc);
    size += block.length;
  }
  const rest = Buffer.from(unit.repeat(unit === '' ? 0 : times - whole * blockUnits) + tail, 'utf8');
  parts.push(deflateRawSync(rest, { level: 9 }));
  crc = crc32(rest, crc);
  size += rest.length;
  return { name, method: 8, data: Buffer.concat(parts), crc, size };
}

/** The bytes of a zip of `entries` (no zip64: every size below 4 GiB). */
export function zipOf(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const size = e.declaredSize ?? e.size;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(e.method, 8);
    local.writeUInt16LE(0x21, 12); // 1980-01-01
    local.writeUInt32LE(e.crc >>> 0, 14);
    local.writeUInt32LE(e.data.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(e.method, 10);
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(e.crc >>> 0, 16);
    central.writeUInt32LE(e.data.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, e.data);
    centrals.push(central, name);
    offset += local.length + name.length + e.data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

const CONTENT_TYPES = `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`;
const RELS = `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`;
const HEAD = `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`;
const TAIL = `</w:body></w:document>`;
const PARAGRAPH = '<w:p><w:r><w:t>all work and no play makes a bomb</w:t></w:r></w:p>';

/**
 * A DOCX whose word/document.xml inflates to about `inflatedBytes` of real paragraphs.
 * `lie`: its headers declare 1 000 bytes instead (yauzl must catch it while inflating).
 */
export function docxBomb(inflatedBytes: number, options: { lie?: boolean } = {}): Buffer {
  const doc = repeatedEntry('word/document.xml', HEAD, PARAGRAPH, Math.ceil(inflatedBytes / PARAGRAPH.length), TAIL);
  if (options.lie) doc.declaredSize = 1_000;
  return zipOf([stored('[Content_Types].xml', CONTENT_TYPES), stored('_rels/.rels', RELS), doc]);
}

/** An ordinary DOCX of `paragraphs` (the guard must let it through). */
export function plainDocx(paragraphs: string[]): Buffer {
  const body = paragraphs.map((p) => `<w:p><w:r><w:t>${p}</w:t></w:r></w:p>`).join('');
  return zipOf([
    stored('[Content_Types].xml', CONTENT_TYPES),
    stored('_rels/.rels', RELS),
    repeatedEntry('word/document.xml', HEAD + body, '', 0, TAIL),
  ]);
}
