import type { TestProject } from 'vitest/node';
import { applyCrds } from './crds.js';
import { startCluster, type ClusterInfo } from './cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    k8sCluster: ClusterInfo;
  }
}

/** One API server for every k8s test file (each file works in its own namespaces); CRDs applied once. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await startCluster();
  if (cluster.mode !== 'stand-in') await applyCrds(cluster.kubeconfigPath);
  console.log(`\n[k8s] tests run against ${cluster.description}\n`);
  project.provide('k8sCluster', {
    mode: cluster.mode,
    kubeconfigPath: cluster.kubeconfigPath,
    description: cluster.description,
  });
  return () => cluster.stop();
}
