import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { kubeRequest } from './raw-client.js';

export const CRDS_DIR = path.resolve(import.meta.dirname, '../../../crds');

export function crdDocuments(dir = CRDS_DIR): any[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => parse(readFileSync(path.join(dir, f), 'utf8')));
}

/** Creates or replaces crds/*.yaml and waits until the server reports them Established. */
export async function applyCrds(kubeconfigPath: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  for (const crd of crdDocuments()) {
    const base = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
    let res = await kubeRequest(kc, 'POST', base, crd);
    if (res.status === 409) {
      const current = await kubeRequest(kc, 'GET', `${base}/${crd.metadata.name}`);
      res = await kubeRequest(kc, 'PUT', `${base}/${crd.metadata.name}`, {
        ...crd,
        metadata: { ...crd.metadata, resourceVersion: current.body.metadata.resourceVersion },
      });
    }
    if (res.status >= 300)
      throw new Error(`CRD ${crd.metadata.name} refused (${res.status}): ${JSON.stringify(res.body)}`);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const got = await kubeRequest(kc, 'GET', `${base}/${crd.metadata.name}`);
      if ((got.body?.status?.conditions ?? []).some((c: any) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline)
        throw new Error(`CRD ${crd.metadata.name} not Established: ${JSON.stringify(got.body?.status)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
