import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadManifests, parseManifests } from '../../src/core/flows/resources/manifest-loader.js';
import { secretDataOf, tokenSecretNameOf } from '../../src/core/flows/resources/manifest.schema.js';

// Manifest parsing is pure: no storage. A bad document is reported with file, document, line and
// field, and never stops the other documents.

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'mbx-manifests-'));
  dirs.push(d);
  return d;
};

describe('resources/example.yaml', () => {
  it('declares the quick-start Domain, password Secret and Mailbox, with docs/contract.md defaults', async () => {
    const set = await loadManifests('resources/example.yaml');
    expect(set.errors).toEqual([]);
    expect(set.complete).toBe(true);
    const [domain] = set.domains;
    const [mailbox] = set.mailboxes;
    expect(domain).toMatchObject({
      metadata: { name: 'example-test', namespace: 'default' },
      spec: { domain: 'example.test' },
    });
    expect(tokenSecretNameOf(domain!)).toBe('example-test-domain-token');
    expect(mailbox!.spec).toMatchObject({
      address: 'agent@example.test',
      aliases: ['assistant@example.test'],
      passwordSecretRef: { name: 'agent-password', key: 'password' },
    });
    expect(tokenSecretNameOf(mailbox!)).toBe('agent-mailbox-token');
    expect(secretDataOf(set.secrets[0]!)).toEqual({ password: 'agent-password-123' });
  });
});

describe('parseManifests', () => {
  const good = `apiVersion: mailbox-service.dev/v1alpha1
kind: Domain
metadata: { name: good, namespace: team-a }
spec: { domain: Good.Test }`;

  it('reports each bad document with file, document, line and field, and keeps the good ones', () => {
    const text = [
      good,
      'apiVersion: mailbox-service.dev/v1alpha1\nkind: Mailbox\nmetadata: { name: bad }\nspec: { address: not-an-address }',
      'apiVersion: mailbox-service.dev/v1alpha1\nkind: Mailbox\nmetadata: { name: typo }\nspec: { address: a@good.test, displayname: A }',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }',
      'kind: Domain\nspec: [unclosed',
      '',
    ].join('\n---\n');
    const { manifests, errors } = parseManifests(text, 'team.yaml');
    expect(manifests.map((m) => m.manifest.metadata.name)).toEqual(['good']);
    expect(manifests[0]!.manifest).toMatchObject({ metadata: { namespace: 'team-a' }, spec: { domain: 'good.test' } });
    expect(errors).toHaveLength(4);
    expect(errors[0]).toMatchObject({ file: 'team.yaml', document: 2, line: 6 });
    expect(errors[0]!.message).toMatch(/^Mailbox bad: spec\.address: must be an e-mail address/);
    expect(errors[1]).toMatchObject({ document: 3 });
    expect(errors[1]!.message).toContain('spec: Unrecognized key: "displayname"');
    expect(errors[2]!.message).toContain('kind: "ConfigMap" is not supported');
    expect(errors[3]).toMatchObject({ document: 5 });
    expect(errors[3]!.message).toMatch(/^YAML syntax/);
  });

  it('refuses aliases outside the mailbox domain, duplicate aliases and unsafe names', () => {
    const text = `apiVersion: mailbox-service.dev/v1alpha1
kind: Mailbox
metadata: { name: ../escape }
spec:
  address: a@x.test
  aliases: [b@y.test, c@x.test, c@x.test, a@x.test]
  passwordSecretRef: { name: Bad_Name, key: password }`;
    const { errors } = parseManifests(text, 'm.yaml');
    const message = errors[0]!.message;
    expect(message).toContain('metadata.name: must be a lower-case RFC 1123 name');
    expect(message).toContain("spec.aliases[0]: must be in the mailbox's domain x.test");
    expect(message).toContain('spec.aliases[2]: c@x.test is listed twice');
    expect(message).toContain('spec.aliases[3]: must differ from address');
    expect(message).toContain('spec.passwordSecretRef.name');
  });

  it('reads spec.policy with the API schema: patterns, approval modes, unknown fields', () => {
    const doc = (policy: string) => `apiVersion: mailbox-service.dev/v1alpha1
kind: Mailbox
metadata: { name: agent }
spec:
  address: agent@x.test
  policy: ${policy}`;
    const good = parseManifests(doc("{ blockedRecipients: ['@*.Spam.test'], approval: external }"), 'p.yaml');
    expect(good.errors).toEqual([]);
    const declared = good.manifests[0]!.manifest as { spec: { policy?: unknown } };
    // Defaults filled in: a declared policy is the whole policy (docs/api.md).
    expect(declared.spec.policy).toMatchObject({
      blockedRecipients: ['@*.spam.test'],
      approval: 'external',
      allowedRecipients: [],
    });
    const bad = parseManifests(doc("{ allowedRecipients: ['x.test'], approval: sometimes, quota: 1 }"), 'p.yaml');
    const message = bad.errors[0]!.message;
    expect(message).toContain('spec.policy.allowedRecipients[0]: must be user@domain, @domain or @*.domain');
    expect(message).toContain('spec.policy.approval');
    expect(message).toContain('quota');
  });

  it('decodes Secret data (base64) and lets stringData win', () => {
    const text = `apiVersion: v1
kind: Secret
metadata: { name: s }
data: { password: ${Buffer.from('from-data').toString('base64')}, other: ${Buffer.from('kept').toString('base64')} }
stringData: { password: from-string-data }`;
    const { manifests } = parseManifests(text, 's.yaml');
    expect(secretDataOf(manifests[0]!.manifest as never)).toEqual({ password: 'from-string-data', other: 'kept' });
  });
});

describe('loadManifests', () => {
  it('reads *.yaml and *.yml under a directory, skips dot-entries, reports duplicates (first wins)', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'nested'));
    mkdirSync(path.join(dir, '..2024_01_01'));
    const domain = (name: string, d: string) =>
      `apiVersion: mailbox-service.dev/v1alpha1\nkind: Domain\nmetadata: { name: ${name} }\nspec: { domain: ${d} }\n`;
    writeFileSync(path.join(dir, 'a.yaml'), domain('one', 'one.test'));
    writeFileSync(path.join(dir, 'nested', 'b.yml'), domain('two', 'two.test') + '---\n' + domain('one', 'again.test'));
    writeFileSync(path.join(dir, '..2024_01_01', 'a.yaml'), domain('hidden', 'hidden.test'));
    writeFileSync(path.join(dir, 'notes.txt'), 'not yaml: [');
    const set = await loadManifests(dir);
    expect(set.domains.map((d) => d.spec.domain)).toEqual(['one.test', 'two.test']);
    expect(set.errors).toHaveLength(1);
    expect(set.errors[0]).toMatchObject({ file: path.join(dir, 'nested', 'b.yml'), document: 2 });
    expect(set.errors[0]!.message).toContain('Domain/default/one is already declared in');
    expect(set.complete).toBe(false);
  });

  it('reports a missing target as incomplete instead of throwing', async () => {
    const set = await loadManifests(path.join(tempDir(), 'missing'));
    expect(set.complete).toBe(false);
    expect(set.errors[0]!.message).toMatch(/^cannot read/);
  });

  it('keeps the example in sync with the README quick start', () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme).toContain('example-test-domain-token.json');
    expect(readme).toContain('agent-password-123');
  });
});
