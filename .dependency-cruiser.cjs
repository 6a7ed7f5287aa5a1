// The import rules of ARCHITECTURE.md, checked by `make lint` (dependency-cruiser). Each rule names
// the layer it protects; a new exception needs a reason written here, not a silenced rule.

// The floors of src/core (ARCHITECTURE.md, "Floors"), lowest first: a module imports its own floor
// or a lower one, never a higher one. An entry is a folder (ending in /) or a file; the most
// specific entry holding a module names its floor. src/core/services.ts, which builds every floor,
// stands above them all.
const FLOORS = {
  base: ['src/core/base/'],
  access: ['src/core/access/'],
  state: ['src/core/state/'],
  flows: ['src/core/flows/'],
};
const CORE_TOP = 'src/core/services.ts';
// Inside flows, policy decides and delivery carries out: delivery may import policy, not back.
const POLICY = ['src/core/flows/policy/'];
const DELIVERY = [
  'src/core/flows/delivery/',
  'src/core/flows/inbound/',
  'src/core/flows/intake/',
  'src/core/flows/submission/',
  'src/core/flows/outbound/',
  'src/core/flows/sending/',
];

const pattern = (entry) => '^' + entry.replace(/[.]/g, '[.]') + (entry.endsWith('/') ? '' : '$');
const FLOOR_NAMES = Object.keys(FLOORS);
const entries = FLOOR_NAMES.flatMap((floor, level) => FLOORS[floor].map((entry) => ({ entry, level })));
/** Entries of other levels nested inside `entry` (a file listed under a folder of another floor). */
const nestedElsewhere = (entry, keep) =>
  entries.filter((e) => e.entry !== entry && e.entry.startsWith(entry) && !keep(e.level)).map((e) => pattern(e.entry));
/** The path/pathNot pair that selects the modules whose floor passes `keep`. */
function floorsWhere(keep) {
  const own = entries.filter((e) => keep(e.level));
  return {
    path: [...own.map((e) => pattern(e.entry)), ...(keep(FLOOR_NAMES.length) ? [pattern(CORE_TOP)] : [])],
    pathNot: [...new Set(own.flatMap((e) => nestedElsewhere(e.entry, keep)))],
  };
}
const floorRules = [
  {
    name: 'core-has-a-floor',
    severity: 'error',
    comment: 'Every module of src/core stands on a floor: name its folder or file in FLOORS.',
    from: { path: '^src/core/', pathNot: floorsWhere(() => true).path },
    to: {},
  },
  ...FLOOR_NAMES.map((floor, level) => ({
    name: `core-floor-${floor}`,
    severity: 'error',
    comment: `The ${floor} floor of src/core imports only its own floor and those below it (ARCHITECTURE.md, "Floors").`,
    from: floorsWhere((l) => l === level),
    to: floorsWhere((l) => l > level),
  })),
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...floorRules,
    {
      name: 'core-flows-policy-below-delivery',
      severity: 'error',
      comment: 'Policy decides what delivery does; delivery imports policy, policy never imports delivery.',
      from: { path: POLICY.map(pattern), pathNot: floorsWhere((l) => l !== FLOOR_NAMES.indexOf('flows')).path },
      to: { path: DELIVERY.map(pattern), pathNot: floorsWhere((l) => l !== FLOOR_NAMES.indexOf('flows')).path },
    },
    {
      name: 'channel-storage-through-core',
      severity: 'error',
      comment:
        'Channels reach rows and blobs through the core (its services and ports), never storage directly. ' +
        "One exception: the realtime replay's default gate, src/storage/fair-gate.ts, a scheduling primitive that holds no rows.",
      from: { path: '^src/channels/' },
      to: { path: '^src/storage/', pathNot: '^src/storage/fair-gate[.]ts$' },
    },
    {
      name: 'web-only-shared-types',
      severity: 'error',
      comment: 'The web console is a separate bundle: of the server it imports only the shared shapes of src/types/.',
      from: { path: '^web/' },
      to: { path: '^(src|operator|bench|test|clients)/', pathNot: '^src/types/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes load order matter and hides which module owns what.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-no-channel',
      severity: 'error',
      comment: 'The core owns every rule; channels are adapters around it, never the other way.',
      from: { path: '^src/core/' },
      to: { path: '^src/channels/' },
    },
    {
      name: 'core-no-entry-point',
      severity: 'error',
      comment: 'The composition root (src/runtime/) and the CLI build the core; the core never reaches back.',
      from: { path: '^src/core/' },
      to: { path: ['^src/cli[.]ts$', '^src/cli/', '^src/runtime/', '^operator/'] },
    },
    {
      name: 'core-no-telemetry',
      severity: 'error',
      comment: 'The core reports through the ports in src/core/base/observability.ts; src/telemetry implements them.',
      from: { path: '^src/core/' },
      to: { path: ['^src/telemetry/', '^node_modules/(@opentelemetry|prom-client)/'] },
    },
    {
      name: 'core-no-protocol-library',
      severity: 'error',
      comment: 'Protocol libraries belong to their channel: the core speaks in its own types.',
      from: { path: '^src/core/' },
      to: {
        path: '^node_modules/(koa|koa-body|@koa|smtp-server|socket[.]io|@socket[.]io|@modelcontextprotocol)/',
      },
    },
    {
      name: 'storage-no-core',
      severity: 'error',
      comment: 'Storage is below the core: it stores rows and blobs, it does not know the rules.',
      from: { path: '^src/storage/' },
      to: { path: ['^src/core/', '^src/channels/', '^src/telemetry/', '^src/cli', '^src/runtime/'] },
    },
    {
      name: 'channel-no-other-channel',
      severity: 'error',
      comment: 'A channel may share code only through src/channels/shared/.',
      from: { path: '^src/channels/([^/]+)/' },
      to: { path: '^src/channels/', pathNot: ['^src/channels/$1/', '^src/channels/shared/'] },
    },
    {
      name: 'shared-channel-code-is-shared',
      severity: 'error',
      comment: 'src/channels/shared/ is below every channel, so it imports none of them.',
      from: { path: '^src/channels/shared/' },
      to: { path: '^src/channels/', pathNot: '^src/channels/shared/' },
    },
    {
      name: 'telemetry-below-core-and-channels',
      severity: 'error',
      comment:
        'Telemetry implements the core port (core/observability.ts) and is fed by channels and the composition ' +
        'root; it imports no other core module, no channel and no runtime (it may read storage for its gauges).',
      from: { path: '^src/telemetry/' },
      to: {
        path: ['^src/core/', '^src/channels/', '^src/cli', '^src/runtime/'],
        pathNot: '^src/core/base/observability[.]ts$',
      },
    },
    {
      name: 'only-cli-imports-main',
      severity: 'error',
      comment:
        'The process entry is the CLI (src/cli.ts and its commands in src/cli/); nothing else imports it. ' +
        'Code that needs a running service imports the composition root, src/runtime/.',
      from: { pathNot: ['^src/cli[.]ts$', '^src/cli/'] },
      to: { path: ['^src/main[.]ts$', '^src/cli[.]ts$', '^src/cli/'] },
    },
    {
      name: 'runtime-only-from-entry-points',
      severity: 'error',
      comment: 'The composition root is started by the CLI commands, the operator, benchmarks and tests, nothing else.',
      from: {
        pathNot: [
          '^src/cli[.]ts$',
          '^src/cli/',
          '^src/apply-command[.]ts$',
          '^src/runtime/',
          '^operator/',
          '^bench/',
          '^test/',
        ],
      },
      to: { path: '^src/runtime/' },
    },
    {
      name: 'types-is-a-leaf',
      severity: 'error',
      comment: 'src/types/ holds the shapes every layer shares (the wire event); it imports nothing of ours.',
      from: { path: '^src/types/' },
      to: { path: '^(src|operator)/', pathNot: '^src/types/' },
    },
    {
      name: 'config-is-a-leaf',
      severity: 'error',
      comment: 'Configuration is read once and passed down; it depends on no layer.',
      from: { path: '^src/config/' },
      to: { path: ['^src/core/', '^src/storage/', '^src/channels/', '^src/telemetry/', '^src/runtime/'] },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that resolves to nothing is a typo or a missing dependency.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^dist/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.check.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.d.ts'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
