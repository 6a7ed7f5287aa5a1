import { rm } from 'node:fs/promises';
import path from 'node:path';
import {
  isNamespaceName,
  isObjectName,
  refOf,
  secretDataOf,
  type ResourceRef,
  type SecretManifest,
} from './manifest.schema.js';
import { readJsonFile, writeFileAtomic } from './atomic-file.js';
import type { SecretStore } from './ports.js';

/**
 * Secrets without Kubernetes (docs/contract.md): `<data dir>/secrets/<namespace>/<name>.json`, a JSON
 * object of strings, mode 0600 in directories of mode 0700. A user may drop a password secret
 * here by hand; the token secrets are written by the reconciler.
 */
export class FileSecretStore implements SecretStore {
  constructor(readonly root: string) {}

  pathOf(namespace: string, name: string): string {
    // Names come from validated manifests; checked again because they become a path.
    if (!isNamespaceName(namespace) || !isObjectName(name)) throw new Error(`invalid secret name ${namespace}/${name}`);
    return path.join(this.root, namespace, `${name}.json`);
  }

  async get(namespace: string, name: string): Promise<Record<string, string> | null> {
    const file = this.pathOf(namespace, name);
    let value: unknown;
    try {
      value = await readJsonFile(file);
    } catch (err) {
      throw new Error(`secret file ${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
    }
    if (value === null) return null;
    if (typeof value !== 'object' || Array.isArray(value)) throw notStrings(file);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(value)) {
      if (typeof v === 'string') out[k] = v;
      else if (isTsKey(k) && (v === null || Number.isInteger(v))) out[k] = v === null ? '' : String(v);
      else throw notStrings(file);
    }
    return out;
  }

  /**
   * Every `…Ts` value is written as an integer of milliseconds, or null (docs/contract.md, Wire format):
   * a JSON file is read by programs that expect the API's types. Kubernetes Secrets stay strings.
   */
  async put(namespace: string, name: string, data: Record<string, string>, _owner: ResourceRef): Promise<void> {
    const json: Record<string, string | number | null> = {};
    for (const [k, v] of Object.entries(data))
      json[k] = isTsKey(k) && /^\d{1,16}$/.test(v) ? Number(v) : isTsKey(k) && v === '' ? null : v;
    await writeFileAtomic(this.pathOf(namespace, name), JSON.stringify(json, null, 2) + '\n', 0o600, 0o700);
  }

  async delete(namespace: string, name: string): Promise<void> {
    await rm(this.pathOf(namespace, name), { force: true });
  }
}

const isTsKey = (key: string): boolean => /Ts$/.test(key);
const notStrings = (file: string) =>
  new Error(`secret file ${file} must hold a JSON object of string values (integers or null for …Ts keys)`);

/** Writes a Secret manifest's data to a store, only when it differs from what is stored. */
export async function writeSecretManifest(
  store: SecretStore,
  secret: SecretManifest,
): Promise<'created' | 'updated' | 'unchanged'> {
  const ref = refOf(secret);
  const data = secretDataOf(secret);
  const current = await store.get(ref.namespace, ref.name).catch(() => null);
  const keys = Object.keys(data);
  if (current && keys.length === Object.keys(current).length && keys.every((k) => current[k] === data[k]))
    return 'unchanged';
  await store.put(ref.namespace, ref.name, data, ref);
  return current ? 'updated' : 'created';
}
