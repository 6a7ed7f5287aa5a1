import { createInterface } from 'node:readline';

// On-CPU time per request by part of the stack, from `perf script` of one thread sampled with call
// chains. BENCH_PROFILE's V8 profile samples wall time: on a machine whose cores PostgreSQL and
// autocannon share, a thread waiting for a core is charged to the function it was in (mostly the
// socket writes, whose wake-ups hand the core to the reader). perf's cpu-clock samples only count
// time on a core. With JIT frames named (node --perf-basic-prof, e.g. BENCH_API_NODE_OPTIONS):
//   perf record -F 999 -g -t <pid> -- sleep 10;  perf script | node dist/bench/http/perf-groups.js <requests> [hz]
// A sample's native frames above its first JS frame decide the kinds below (JSON.stringify's number
// formatting is JSON, a scavenge is GC); any other sample goes to the module of its nearest JS frame.

const NATIVE_KINDS: Array<[RegExp, string]> = [
  [/JsonStringifier|JsonStringify|JsonParse/, 'JSON'],
  [/Scavenge|MarkCompact|Heap::|Sweeper|ConcurrentMarking|MinorMS|Evacuat/, 'GC (main thread)'],
  [/Utf8Length|Utf8::Encode|StringSlice|FastByteLengthUtf8|StringBytes::Write|Utf8Decoder|WriteUtf8/, 'UTF-8'],
];

const PACKAGE_GROUPS: Array<[RegExp, string]> = [
  [/^(pg|pg-.*|postgres-.*)$/, 'pg driver'],
  [/^@opentelemetry\//, 'OpenTelemetry'],
  [
    /^(koa|@koa\/router|koa-compose|delegates|on-finished|ee-first|parseurl|statuses|vary|type-is|debug)$/,
    'Koa + router',
  ],
];

const OUR_GROUPS: Array<[RegExp, string]> = [
  [/telemetry\/tracing|channels\/http\/envelope/, 'OpenTelemetry span + envelope'],
  [/request-metrics|telemetry\/metric/, 'metrics (prom-client calls)'],
  [/access-log|logging|base\/logger/, 'access log'],
  [/change-mark|change-sequence/, 'change mark'],
  [/paging\/cursor/, 'cursor HMAC'],
  [/channels\/http\/etag/, 'ETag'],
  [/core\/access|shared\/bearer|shared\/client-address/, 'auth + client address'],
  [/message\.views|message-trust|snippet|storage\/database/, 'view mapping'],
];

/** The group of a JS frame's script, or null to charge the caller (node's crypto wrappers). */
function groupOf(url: string): string | null {
  if (url.startsWith('node:internal/crypto')) return null;
  if (/^node:(_http|net|internal\/streams|internal\/stream_base|stream)/.test(url)) return 'node http/net/streams';
  if (/^node:.*(task_queues|async_context|async_hooks|timers)/.test(url)) return 'node ticks, timers, async context';
  if (url.startsWith('node:')) return 'node internals (other)';
  const pkg = [...url.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)].pop()?.[1];
  if (pkg) return PACKAGE_GROUPS.find(([re]) => re.test(pkg))?.[1] ?? pkg;
  const ours = /\/((?:src|bench)\/.*?)\.[jt]s$/.exec(url)?.[1];
  if (ours) return OUR_GROUPS.find(([re]) => re.test(ours))?.[1] ?? ours;
  return url.replace(/^.*\//, '');
}

function groupOfSample(frames: Array<{ symbol: string; kernel: boolean }>): string {
  if (frames[0]!.kernel) return 'kernel (syscalls, page faults)';
  for (const { symbol } of frames) {
    if (symbol.startsWith('JS:')) break;
    const kind = NATIVE_KINDS.find(([re]) => re.test(symbol))?.[1];
    if (kind) return kind;
  }
  for (const { symbol } of frames) {
    const url = /^JS:\S*? ?.*? ((?:file:\/\/)?\/\S+|node:\S+):\d+:\d+$/.exec(symbol)?.[1];
    const group = url === undefined ? undefined : groupOf(url);
    if (group) return group;
  }
  return 'native, no JS caller (libuv, malloc)';
}

async function main(): Promise<void> {
  const requests = Number(process.argv[2]);
  const hz = Number(process.argv[3] ?? 999);
  if (!(requests > 0)) throw new Error('usage: perf script | node perf-groups.js <requests in the window> [hz]');
  const groups = new Map<string, number>();
  let samples = 0;
  let frames: Array<{ symbol: string; kernel: boolean }> = [];
  const flush = () => {
    if (frames.length === 0) return;
    const group = groupOfSample(frames);
    groups.set(group, (groups.get(group) ?? 0) + 1);
    samples++;
    frames = [];
  };
  for await (const line of createInterface({ input: process.stdin })) {
    const frame = /^\s+[0-9a-f]+ (.*) \((.*)\)$/.exec(line);
    if (frame) frames.push({ symbol: frame[1]!.replace(/\+0x[0-9a-f]+$/, ''), kernel: frame[2]!.includes('kernel') });
    else if (!/^\s/.test(line)) flush();
  }
  flush();
  const perRequest = (n: number) => ((n / hz) * 1000) / requests;
  console.log(`${samples} samples: ${perRequest(samples).toFixed(3)} ms CPU per request\n`);
  console.log('| group | ms/req |\n| --- | --- |');
  for (const [group, n] of [...groups].sort((a, b) => b[1] - a[1]))
    console.log(`| ${group} | ${perRequest(n).toFixed(3)} |`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
