import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cruise, type IForbiddenRuleType, type IReporterOutput } from 'dependency-cruiser';
import { afterAll, describe, expect, it } from 'vitest';

// The import rules of ARCHITECTURE.md live in .dependency-cruiser.cjs and run in `make lint`. This
// proves each rule catches the import it names: a throw-away tree per case, cruised with the real
// rule set, must report that rule (and the allowed imports beside them must report nothing).
const ROOT = path.resolve(import.meta.dirname, '../..');
const config = createRequire(import.meta.url)(path.join(ROOT, '.dependency-cruiser.cjs')) as {
  forbidden: IForbiddenRuleType[];
};
const work = mkdtempSync(path.join(tmpdir(), 'layering-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let n = 0;
/** Writes `files` (path → the paths it imports) into a fresh tree and returns the broken rules. */
async function brokenRules(files: Record<string, string[]>): Promise<string[]> {
  const dir = path.join(work, String(n++));
  for (const [file, imports] of Object.entries(files)) {
    const full = path.join(dir, file);
    mkdirSync(path.dirname(full), { recursive: true });
    const lines = imports.map((to, i) => {
      let spec = to.startsWith('node_modules/')
        ? to.slice('node_modules/'.length)
        : path.relative(path.dirname(file), to).replace(/\.ts$/, '');
      if (!spec.startsWith('.') && !to.startsWith('node_modules/')) spec = `./${spec}`;
      return `import * as m${i} from '${spec}';\nexport const u${i} = m${i};`;
    });
    writeFileSync(full, lines.join('\n') + '\nexport const here = 1;\n');
  }
  // Every imported file exists (a package as node_modules/<name>), importing nothing unless listed;
  // a target named `missing/...` is left out, to be unresolvable.
  for (const to of Object.values(files).flat()) {
    if (files[to] || to.startsWith('missing/')) continue;
    const target = to.startsWith('node_modules/') ? path.join(dir, to, 'index.js') : path.join(dir, to);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, 'export const here = 1;\n');
    if (to.startsWith('node_modules/'))
      writeFileSync(path.join(dir, to, 'package.json'), JSON.stringify({ name: path.basename(to), main: 'index.js' }));
  }
  const result: IReporterOutput = await cruise(
    ['src', ...['operator', 'web'].filter((root) => Object.keys(files).some((f) => f.startsWith(`${root}/`)))],
    {
      baseDir: dir,
      validate: true,
      ruleSet: { forbidden: config.forbidden },
      tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
    },
    { extensions: ['.ts', '.js'] },
  );
  const output = result.output as { summary: { violations: { rule: { name: string } }[] } };
  return [...new Set(output.summary.violations.map((v) => v.rule.name))].sort();
}

/** One forbidden import per rule: the rule's name and a tree (file → what it imports) that breaks it. */
const CASES: [string, Record<string, string[]>][] = [
  ['core-no-channel', { 'src/core/a.ts': ['src/channels/http/app.ts'] }],
  ['core-no-entry-point', { 'src/core/a.ts': ['src/runtime/runtime.ts'] }],
  ['core-no-telemetry', { 'src/core/a.ts': ['src/telemetry/tracing.ts'] }],
  ['storage-no-core', { 'src/storage/a.ts': ['src/core/base/errors.ts'] }],
  ['channel-no-other-channel', { 'src/channels/mcp/a.ts': ['src/channels/http/app.ts'] }],
  ['shared-channel-code-is-shared', { 'src/channels/shared/a.ts': ['src/channels/http/app.ts'] }],
  ['telemetry-below-core-and-channels', { 'src/telemetry/a.ts': ['src/core/services.ts'] }],
  ['only-cli-imports-main', { 'operator/src/a.ts': ['src/cli.ts'] }],
  ['runtime-only-from-entry-points', { 'src/channels/http/a.ts': ['src/runtime/runtime.ts'] }],
  ['types-is-a-leaf', { 'src/types/a.ts': ['src/core/base/errors.ts'] }],
  ['config-is-a-leaf', { 'src/config/a.ts': ['src/storage/database.ts'] }],
  ['no-circular', { 'src/core/a.ts': ['src/core/b.ts'], 'src/core/b.ts': ['src/core/a.ts'] }],
  ['core-no-protocol-library', { 'src/core/a.ts': ['node_modules/smtp-server'] }],
  ['core-no-telemetry', { 'src/core/a.ts': ['node_modules/prom-client'] }],
  ['not-to-unresolvable', { 'src/core/a.ts': ['missing/nothing-here.ts'] }],
  // The floors of src/core: each case is an import one floor up (or to the core's composition).
  ['core-floor-base', { 'src/core/base/keys/server-key.ts': ['src/core/access/token-cipher.ts'] }],
  ['core-floor-base', { 'src/core/base/loops/polling-loop.ts': ['src/core/flows/housekeeping/storage-sweeper.ts'] }],
  ['core-floor-access', { 'src/core/access/login.service.ts': ['src/core/state/mailboxes/mailbox.schemas.ts'] }],
  ['core-floor-access', { 'src/core/access/token.store.ts': ['src/core/flows/policy/outbound-policy.ts'] }],
  [
    'core-floor-state',
    { 'src/core/state/events/event-log.store.ts': ['src/core/flows/webhooks/webhook-outbox.store.ts'] },
  ],
  ['core-floor-state', { 'src/core/state/mail/mime-parse.ts': ['src/core/flows/sending/send.schemas.ts'] }],
  ['core-floor-flows', { 'src/core/flows/outbound/outbox-worker.ts': ['src/core/services.ts'] }],
  [
    'core-flows-policy-below-delivery',
    { 'src/core/flows/policy/approval.service.ts': ['src/core/flows/sending/outbound.store.ts'] },
  ],
  ['core-has-a-floor', { 'src/core/nowhere/a.ts': ['src/core/base/errors.ts'] }],
  ['channel-storage-through-core', { 'src/channels/http/a.ts': ['src/storage/database.ts'] }],
  ['web-only-shared-types', { 'web/src/a.ts': ['src/core/base/errors.ts'] }],
];

describe('import rules (.dependency-cruiser.cjs)', () => {
  it.each(CASES)('%s catches its forbidden import', async (rule, files) => {
    expect(await brokenRules(files)).toContain(rule);
  });

  it('lets the allowed directions through', async () => {
    expect(
      await brokenRules({
        'src/runtime/runtime.ts': ['src/core/services.ts', 'src/channels/http/app.ts', 'src/telemetry/metrics.ts'],
        'src/channels/http/app.ts': ['src/core/services.ts', 'src/channels/shared/listen.ts'],
        'src/channels/mcp/index.ts': ['src/channels/shared/bearer-token.ts', 'src/core/base/errors.ts'],
        'src/core/services.ts': [
          'src/storage/database.ts',
          'src/types/mailbox-event.ts',
          'src/core/base/observability.ts',
        ],
        'src/storage/database.ts': ['src/types/mailbox-event.ts'],
        'src/telemetry/metrics.ts': ['src/core/base/observability.ts', 'src/storage/database.ts'],
        'src/cli.ts': ['src/cli/program.ts'],
        'src/cli/program.ts': ['src/runtime/runtime.ts'],
        'operator/src/operator.ts': ['src/runtime/runtime.ts', 'src/core/services.ts'],
        'src/channels/smtp/index.ts': ['node_modules/smtp-server', 'src/channels/shared/listen.ts'],
        'src/channels/realtime/catch-up.ts': ['src/storage/fair-gate.ts'],
        'web/src/live.ts': ['src/types/mailbox-event.ts'],
        // Floors: down and sideways pass, and a lower floor's file listed inside a higher floor's folder.
        'src/core/flows/outbound/outbox-worker.ts': [
          'src/core/base/services.ts',
          'src/core/flows/policy/outbound-policy.ts',
          'src/core/state/messages/message.store.ts',
          'src/core/base/loops/polling-loop.ts',
        ],
        'src/core/flows/policy/outbound-policy.ts': [
          'src/core/state/audit/audit.store.ts',
          'src/core/access/scopes.ts',
        ],
        'src/core/access/token.store.ts': ['src/core/access/policy.schemas.ts', 'src/core/access/principal.ts'],
        'src/core/access/principal.ts': ['src/core/base/errors.ts', 'src/core/base/net/dns-resolver.ts'],
        'src/core/state/search/search-indexer.ts': [
          'src/core/base/loops/batched-pass.ts',
          'src/core/state/messages/message.store.ts',
        ],
      }),
    ).toEqual([]);
  });

  it('has a case for every rule of the configuration', () => {
    expect([...new Set(CASES.map(([rule]) => rule))].sort()).toEqual(config.forbidden.map((r) => r.name).sort());
  });
});
