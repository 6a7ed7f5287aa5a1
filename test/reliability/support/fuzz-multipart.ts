import fc from 'fast-check';
import { HOSTILE_STRINGS } from './fuzz-values.js';

// multipart/form-data bodies for the upload form, built as bytes so every oddity can be sent:
// no file, two files, odd field names, huge and hostile filenames, bad or missing boundaries,
// truncated forms, bare LF line endings, nested multiparts.

export interface FormPart {
  /** Header lines as sent (each without CRLF). */
  headers: string[];
  body: Buffer;
}

export interface FormBody {
  contentType: string;
  body: Buffer;
  /** Declared Content-Length when it should differ from the body (a claim past the limit). */
  contentLength?: number;
  label: string;
}

export function encodeForm(
  boundary: string,
  parts: FormPart[],
  o: { eol?: string; close?: boolean; preamble?: string } = {},
): Buffer {
  const eol = o.eol ?? '\r\n';
  const chunks: Buffer[] = [];
  if (o.preamble) chunks.push(Buffer.from(o.preamble + eol, 'latin1'));
  for (const p of parts) {
    chunks.push(
      Buffer.from(`--${boundary}${eol}${p.headers.map((h) => h + eol).join('')}${eol}`, 'latin1'),
      p.body,
      Buffer.from(eol),
    );
  }
  if (o.close !== false) chunks.push(Buffer.from(`--${boundary}--${eol}`));
  return Buffer.concat(chunks);
}

/** A filename as a header parameter: raw bytes of the UTF-8 name (what browsers send), quotes as given. */
const latin1OfUtf8 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');

export const field = (name: string, value: string): FormPart => ({
  headers: [`Content-Disposition: form-data; name="${name}"`],
  body: Buffer.from(value, 'utf8'),
});
export const filePart = (
  name: string,
  filename: string | null,
  content: Buffer,
  type: string | null = 'text/plain',
  extra: string[] = [],
): FormPart => ({
  headers: [
    `Content-Disposition: form-data; name="${name}"${filename === null ? '' : `; filename="${latin1OfUtf8(filename)}"`}`,
    ...(type === null ? [] : [`Content-Type: ${type}`]),
    ...extra,
  ],
  body: content,
});

const FILENAMES = [
  'hello.txt',
  ...HOSTILE_STRINGS.filter((s) => s.length < 5000),
  'a\\"b.txt',
  'C:\\fakepath\\evil.exe',
  '/etc/passwd',
  '\u202etxt.exe',
  'x'.repeat(100_000),
  'résumé 日本.pdf',
  'a\u0000b.txt',
  'semi;colon=.txt',
  "name\"; filename*=UTF-8''evil.exe",
];
const TYPES = [
  'text/plain',
  'application/octet-stream',
  'image/png; charset=utf-8',
  '',
  'x',
  'text/html',
  'multipart/mixed; boundary=zz',
  '../../x',
  'a/b; name="\r"',
];

/**
 * Arbitrary upload forms around a valid one (mailboxAddress + one `file`). `addresses` are
 * mailboxAddress values from the fixtures, so many forms reach the core.
 */
export function formArb(addresses: readonly string[]): fc.Arbitrary<FormBody> {
  const boundary = fc.constantFrom(
    '----fuzzBoundary7MA4YWxk',
    'b',
    'x'.repeat(70),
    'x'.repeat(200),
    'with space',
    '"quoted"',
    '--',
    'é',
  );
  const content = fc.oneof(
    fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
    fc.constantFrom(Buffer.alloc(0), Buffer.from('--fuzzBoundary7MA4YWxk--\r\n'), Buffer.alloc(70_000, 'z')),
  );
  const address = fc.constantFrom(...addresses, ...HOSTILE_STRINGS.slice(0, 20));
  const file = fc
    .tuple(
      fc.constantFrom('file', 'file', 'file', 'files', 'FILE', '', 'file[]', 'mailboxAddress'),
      fc.option(fc.constantFrom(...FILENAMES), { nil: null }),
      content,
      fc.option(fc.constantFrom(...TYPES), { nil: null }),
    )
    .map(([n, f, c, t]) => filePart(n, f, c, t));
  const extras = fc.constantFrom<FormPart[]>(
    [],
    [
      {
        headers: [
          'Content-Disposition: form-data; name="file"; filename*=UTF-8\'\'%E2%80%AEtxt.exe',
          'Content-Type: text/plain',
        ],
        body: Buffer.from('rtl'),
      },
    ],
    [{ headers: ['Content-Type: text/plain'], body: Buffer.from('no disposition') }],
    [{ headers: ['Content-Disposition: form-data'], body: Buffer.from('no name') }],
    [
      {
        headers: ['Content-Disposition: attachment; name="file"; filename="a.txt"'],
        body: Buffer.from('not form-data'),
      },
    ],
    [
      {
        headers: [
          'Content-Disposition: form-data; name="file"; filename="b64.txt"',
          'Content-Transfer-Encoding: base64',
        ],
        body: Buffer.from('aGVsbG8='),
      },
    ],
    [
      {
        headers: ['Content-Disposition: form-data; name="nested"', 'Content-Type: multipart/mixed; boundary=inner'],
        body: Buffer.from('--inner\r\nContent-Type: text/plain\r\n\r\nx\r\n--inner--'),
      },
    ],
    [
      {
        headers: [`X-Huge: ${'h'.repeat(200_000)}`, 'Content-Disposition: form-data; name="x"'],
        body: Buffer.from('y'),
      },
    ],
    Array.from({ length: 25 }, (_, i) => field(`f${i}`, 'v')),
    [field('big', 'b'.repeat(70_000))],
    [field('mailboxAddress', 'second@x.test')],
  );
  const shape = fc.record({
    boundary,
    address: fc.option(address, { nil: null }),
    files: fc.array(file, { minLength: 0, maxLength: 2 }),
    extras,
    order: fc.boolean(),
    damage: fc.constantFrom(
      'none',
      'none',
      'none',
      'truncate',
      'no-close',
      'lf-only',
      'wrong-boundary',
      'no-boundary-param',
      'not-multipart',
      'preamble',
      'empty',
      'declared-huge',
      'quoted-boundary',
    ),
    cut: fc.double({ min: 0.05, max: 0.95, noNaN: true }),
  });
  // A well-formed form whose only hostility is in the file's name, type and bytes: these reach the core.
  const wellFormed = fc
    .tuple(
      fc.constantFrom(...addresses),
      fc.option(fc.constantFrom(...FILENAMES), { nil: null }),
      content,
      fc.option(fc.constantFrom(...TYPES), { nil: null }),
    )
    .map(([a, f, c, t]): FormBody => {
      const b = '----fuzzBoundary7MA4YWxk';
      return {
        contentType: `multipart/form-data; boundary=${b}`,
        body: encodeForm(b, [field('mailboxAddress', a), filePart('file', f, c, t)]),
        label: 'form(well-formed)',
      };
    });
  const chaos = shape.map(({ boundary: b, address: a, files, extras: ex, order, damage, cut }) => {
    const fields = a === null ? [] : [field('mailboxAddress', a)];
    const parts = order ? [...fields, ...files, ...ex] : [...files, ...fields, ...ex];
    const ct = (x: string) => `multipart/form-data; boundary=${x}`;
    const label = `form(${files.length} file(s), ${ex.length} extra, ${damage})`;
    switch (damage) {
      case 'truncate': {
        const full = encodeForm(b, parts);
        return { contentType: ct(b), body: full.subarray(0, Math.floor(full.length * cut)), label };
      }
      case 'no-close':
        return { contentType: ct(b), body: encodeForm(b, parts, { close: false }), label };
      case 'lf-only':
        return { contentType: ct(b), body: encodeForm(b, parts, { eol: '\n' }), label };
      case 'wrong-boundary':
        return { contentType: ct('other'), body: encodeForm(b, parts), label };
      case 'no-boundary-param':
        return { contentType: 'multipart/form-data', body: encodeForm(b, parts), label };
      case 'not-multipart':
        return { contentType: 'multipart/mixed; boundary=' + b, body: encodeForm(b, parts), label };
      case 'preamble':
        return {
          contentType: ct(b),
          body: encodeForm(b, parts, { preamble: 'garbage before the first boundary' }),
          label,
        };
      case 'empty':
        return { contentType: ct(b), body: Buffer.alloc(0), label };
      case 'declared-huge':
        return { contentType: ct(b), body: encodeForm(b, parts), contentLength: 30 * 1024 * 1024 * 1024, label };
      case 'quoted-boundary':
        return { contentType: `multipart/form-data; boundary="${b}"`, body: encodeForm(b, parts), label };
      default:
        return { contentType: ct(b), body: encodeForm(b, parts), label };
    }
  });
  return fc.oneof({ weight: 1, arbitrary: wellFormed }, { weight: 2, arbitrary: chaos });
}
