import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1ObjectMeta,
} from '@kubernetes/client-node';
import { operatorMetrics } from './operator-metrics.js';

/** The API clients the operator uses, made once from one KubeConfig. */
export interface KubeClients {
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  coordination: CoordinationV1Api;
}

/** A Domain or Mailbox as the API server returns it (custom objects are untyped JSON). */
export interface CustomObject {
  apiVersion?: string;
  kind?: string;
  metadata: V1ObjectMeta & { name: string; namespace: string };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/**
 * KUBECONFIG when given (one file), else client-node's default: in-cluster service account when
 * running in a pod, else ~/.kube/config.
 */
export function loadKubeConfig(kubeconfigPath?: string): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromDefault();
  return kc;
}

export function kubeClients(kc: KubeConfig): KubeClients {
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    coordination: kc.makeApiClient(CoordinationV1Api),
  };
}

/**
 * client-node 2.x sends custom-object patches as JSON Patch unless told otherwise; every patch
 * here is a JSON merge patch (RFC 7386), which also carries `metadata.resourceVersion` as a
 * precondition when given (409 on a stale object).
 */
export const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** HTTP status of a failed API call (ApiException.code; watch errors carry statusCode). */
export function statusCode(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown } | null;
  if (typeof e?.code === 'number') return e.code;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  return undefined;
}

export const isNotFound = (err: unknown): boolean => statusCode(err) === 404;
export const isConflict = (err: unknown): boolean => statusCode(err) === 409;

/** The server's `Status.message` of a failed call, for logs and conditions (never a token). */
export function apiMessage(err: unknown): string {
  const e = err as { body?: unknown; message?: string };
  const body = typeof e?.body === 'string' ? safeJson(e.body) : e?.body;
  const message = (body as { message?: string } | undefined)?.message;
  return message ?? (statusCode(err) ? `HTTP ${statusCode(err)}` : (e?.message ?? String(err)));
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Runs `attempt` again when the API server answers 409 Conflict (the object changed between our
 * read and our write; client-go's RetryOnConflict). `attempt` must read the object afresh.
 */
export async function retryOnConflict<T>(operation: string, attempt: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (!isConflict(err)) throw err;
      operatorMetrics.conflicts.inc({ operation });
      if (i >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, 20 * i));
    }
  }
}
