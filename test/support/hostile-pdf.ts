import { deflateSync } from 'node:zlib';

/**
 * Hand-built hostile PDFs for the attachment-text caps. Each is a syntactically valid PDF (header,
 * objects, xref, trailer) whose cost hides in its structure, the way attacks on PDF parsers do.
 */
function assemble(objects: (string | Buffer)[]): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  const offsets: number[] = [];
  let length = parts[0]!.length;
  objects.forEach((body, i) => {
    offsets.push(length);
    const chunk = Buffer.concat([
      Buffer.from(`${i + 1} 0 obj\n`),
      typeof body === 'string' ? Buffer.from(body, 'latin1') : body,
      Buffer.from('\nendobj\n'),
    ]);
    parts.push(chunk);
    length += chunk.length;
  });
  const xref = [`xref\n0 ${objects.length + 1}\n`, '0000000000 65535 f \n']
    .concat(offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`))
    .join('');
  parts.push(
    Buffer.from(`${xref}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`),
  );
  return Buffer.concat(parts);
}

/** `count` real, empty pages: cheap to write, and a parser that reads every page pays for each. */
export function hugePageCountPdf(count = 5_000): Buffer {
  const kids = Array.from({ length: count }, (_, i) => `${i + 3} 0 R`).join(' ');
  return assemble([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${kids}] /Count ${count} >>`,
    ...Array.from({ length: count }, () => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>'),
  ]);
}

/** One page whose resources are nested `depth` arrays deep. */
export function deeplyNestedPdf(depth = 200_000): Buffer {
  return assemble([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /X ${'['.repeat(depth)}${']'.repeat(depth)} >> /Contents 4 0 R >>`,
    '<< /Length 0 >>\nstream\n\nendstream',
  ]);
}

/** One page whose small compressed content stream inflates to `mib` MiB of text operators. */
export function contentBombPdf(mib = 96): Buffer {
  const unit = 'BT /F1 12 Tf 72 712 Td (A) Tj ET\n';
  const raw = Buffer.alloc(mib * 1024 * 1024, unit);
  const packed = deflateSync(raw, { level: 9 });
  return assemble([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    Buffer.concat([
      Buffer.from(`<< /Length ${packed.length} /Filter /FlateDecode >>\nstream\n`),
      packed,
      Buffer.from('\nendstream'),
    ]),
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ]);
}
