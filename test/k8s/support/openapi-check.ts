import type { KubeConfig } from '@kubernetes/client-node';
import { kubeRequest } from './raw-client.js';

/**
 * Checks objects against the Kubernetes OpenAPI (v2) document a server publishes: every field
 * must exist in the schema (the API server of 1.20 silently drops unknown fields, so a typo in
 * the chart would otherwise pass), types must match, required fields must be present.
 */
export interface OpenApi {
  definitions: Record<string, Schema>;
}
interface Schema {
  type?: string;
  format?: string;
  $ref?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  'x-kubernetes-group-version-kind'?: Array<{ group: string; version: string; kind: string }>;
}

export async function fetchOpenApi(kc: KubeConfig): Promise<OpenApi> {
  const res = await kubeRequest(kc, 'GET', '/openapi/v2');
  if (res.status !== 200) throw new Error(`GET /openapi/v2: ${res.status}`);
  return res.body as OpenApi;
}

/**
 * Group/versions newer than the server, checked against the older version of the same kind whose
 * fields are the same for what the chart writes (HPA v2 = v2beta2, PDB policy/v1 = v1beta1).
 */
const SAME_SHAPE: Record<string, string> = { 'autoscaling/v2': 'autoscaling/v2beta2', 'policy/v1': 'policy/v1beta1' };

/** The definition name of apiVersion/kind, or null when the server does not know it. */
export function definitionFor(api: OpenApi, apiVersion: string, kind: string): { name: string; via?: string } | null {
  const lookup = (gv: string) => {
    const [group, version] = gv.includes('/') ? gv.split('/') : ['', gv];
    const name = Object.keys(api.definitions).find((n) =>
      (api.definitions[n]!['x-kubernetes-group-version-kind'] ?? []).some(
        (g) => g.group === group && g.version === version && g.kind === kind,
      ),
    );
    return name ?? null;
  };
  const direct = lookup(apiVersion);
  if (direct) return { name: direct };
  const older = SAME_SHAPE[apiVersion];
  const via = older ? lookup(older) : null;
  return via ? { name: via, via: older } : null;
}

export function checkObject(api: OpenApi, obj: any): string[] {
  const def = definitionFor(api, obj.apiVersion, obj.kind);
  if (!def) return [`${obj.apiVersion} ${obj.kind}: not in the server's OpenAPI document`];
  const errors: string[] = [];
  walk(api, obj, { $ref: `#/definitions/${def.name}` }, `${obj.kind}/${obj.metadata?.name}`, errors);
  return errors;
}

function walk(api: OpenApi, value: unknown, schema: Schema, path: string, errors: string[]): void {
  if (schema.$ref) {
    const name = schema.$ref.replace('#/definitions/', '');
    // String-or-number types the schema writes as plain strings.
    if (name.endsWith('.Quantity') || name.endsWith('.IntOrString')) {
      if (typeof value !== 'string' && typeof value !== 'number') errors.push(`${path}: must be a string or a number`);
      return;
    }
    const target = api.definitions[name];
    if (!target) return errors.push(`${path}: unknown schema ${name}`) as unknown as void;
    return walk(api, value, target, path, errors);
  }
  if (value === null || value === undefined) return;
  switch (schema.type) {
    case 'string':
      if (typeof value !== 'string') errors.push(`${path}: must be a string, got ${JSON.stringify(value)}`);
      return;
    case 'integer':
      if (!Number.isInteger(value)) errors.push(`${path}: must be an integer, got ${JSON.stringify(value)}`);
      return;
    case 'number':
      if (typeof value !== 'number') errors.push(`${path}: must be a number`);
      return;
    case 'boolean':
      if (typeof value !== 'boolean') errors.push(`${path}: must be a boolean, got ${JSON.stringify(value)}`);
      return;
    case 'array':
      if (!Array.isArray(value)) return errors.push(`${path}: must be a list`) as unknown as void;
      value.forEach((item, i) => schema.items && walk(api, item, schema.items, `${path}[${i}]`, errors));
      return;
  }
  if (schema.type === 'object' || schema.properties || schema.additionalProperties) {
    if (typeof value !== 'object' || Array.isArray(value))
      return errors.push(`${path}: must be an object`) as unknown as void;
    const record = value as Record<string, unknown>;
    for (const key of schema.required ?? []) if (!(key in record)) errors.push(`${path}.${key}: required`);
    for (const [key, v] of Object.entries(record)) {
      const prop = schema.properties?.[key];
      if (prop) walk(api, v, prop, `${path}.${key}`, errors);
      else if (typeof schema.additionalProperties === 'object')
        walk(api, v, schema.additionalProperties, `${path}.${key}`, errors);
      else if (schema.properties) errors.push(`${path}.${key}: unknown field`);
    }
  }
}
