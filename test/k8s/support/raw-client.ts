import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/**
 * Plain HTTP requests to the API server with the kubeconfig's credentials. The typed client-node
 * methods serialize bodies through their generated models, which silently drop any field they do
 * not know (and rename `x-kubernetes-*`, `enum`, `default`): fine for the operator, wrong for
 * applying CRDs and for checking rendered chart objects, where the server must see every byte.
 */
export async function kubeRequest(
  kc: KubeConfig,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
  accept = 'application/json',
): Promise<{ status: number; body: any }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(cluster.server + path);
  const opts: https.RequestOptions = { method, headers: {} };
  await kc.applyToHTTPSOptions(opts);
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const headers = {
    ...(opts.headers as Record<string, string>),
    accept,
    ...(payload ? { 'content-type': contentType } : {}),
  };
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(url, { ...opts, method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => {
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

const discovery = new Map<string, Promise<Array<{ name: string; kind: string; namespaced: boolean }>>>();

/** The REST path of a kind, from the server's discovery documents. */
export async function resourcePath(
  kc: KubeConfig,
  apiVersion: string,
  kind: string,
  namespace: string,
): Promise<string> {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const key = `${kc.getCurrentCluster()?.server}${base}`;
  if (!discovery.has(key))
    discovery.set(
      key,
      kubeRequest(kc, 'GET', base).then((r) => (r.status === 200 ? r.body.resources : [])),
    );
  const resource = (await discovery.get(key)!).find((r) => r.kind === kind && !r.name.includes('/'));
  if (!resource) throw new Error(`the server does not serve ${kind} in ${apiVersion}`);
  return resource.namespaced ? `${base}/namespaces/${namespace}/${resource.name}` : `${base}/${resource.name}`;
}

/** POST (create) an object, optionally as a server-side dry run; the answer as is. */
export async function createObject(
  kc: KubeConfig,
  obj: any,
  namespace: string,
  options: { dryRun?: boolean } = {},
): Promise<{ status: number; body: any }> {
  const path = await resourcePath(kc, obj.apiVersion, obj.kind, namespace);
  return kubeRequest(kc, 'POST', `${path}${options.dryRun ? '?dryRun=All' : ''}`, obj);
}
