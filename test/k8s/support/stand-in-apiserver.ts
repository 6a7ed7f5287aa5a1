import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { Socket } from 'node:net';

/**
 * An in-process stand-in for the Kubernetes API, used ONLY when no real kube-apiserver is
 * available (every test prints which one it runs against). It implements what the operator
 * uses, with the real server's rules where the operator depends on them: resourceVersion
 * preconditions (409), AlreadyExists (409), JSON merge patch, the status subresource (spec and
 * status written apart, generation bumped on spec changes), finalizers and deletionTimestamp,
 * list + watch from a resourceVersion with 410 Gone once history is compacted, MicroTime parsing
 * of Lease times. It has no OpenAPI validation, no RBAC, no admission: CRD and chart tests skip.
 */
interface Obj {
  apiVersion?: string;
  kind?: string;
  metadata: Record<string, any>;
  spec?: any;
  status?: any;
  [k: string]: any;
}
interface Watcher {
  resource: string;
  namespace?: string | undefined;
  res: http.ServerResponse;
}

const KINDS: Record<string, { kind: string; apiVersion: string; status: boolean }> = {
  domains: { kind: 'Domain', apiVersion: 'mailbox-service.dev/v1alpha1', status: true },
  mailboxes: { kind: 'Mailbox', apiVersion: 'mailbox-service.dev/v1alpha1', status: true },
  secrets: { kind: 'Secret', apiVersion: 'v1', status: false },
  events: { kind: 'Event', apiVersion: 'v1', status: false },
  leases: { kind: 'Lease', apiVersion: 'coordination.k8s.io/v1', status: false },
  namespaces: { kind: 'Namespace', apiVersion: 'v1', status: false },
};
const ROUTE =
  /^\/(?:api\/v1|apis\/mailbox-service\.dev\/v1alpha1|apis\/coordination\.k8s\.io\/v1)(?:\/namespaces\/([^/]+))?\/(domains|mailboxes|secrets|events|leases|namespaces)(?:\/([^/]+))?(\/status)?$/;
const NS_ROUTE = /^\/api\/v1\/namespaces(?:\/([^/]+))?$/;
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

export class StandInApiServer {
  private readonly objects = new Map<string, Obj>();
  private history: Array<{ rv: number; type: string; resource: string; object: Obj }> = [];
  private rv = 100;
  private readonly watchers = new Set<Watcher>();
  private readonly sockets = new Set<Socket>();
  private server: http.Server | null = null;
  port = 0;

  async start(port = 0): Promise<string> {
    this.server = http.createServer(
      (req, res) => void this.handle(req, res).catch((err) => this.fail(res, 500, 'InternalError', String(err))),
    );
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return `http://127.0.0.1:${this.port}`;
  }

  /** Like a restarted API server: every connection (watches included) breaks; refused for `downMs`. */
  async restart(downMs = 1000): Promise<void> {
    await this.stop();
    await new Promise((r) => setTimeout(r, downMs));
    await this.start(this.port);
  }

  async stop(): Promise<void> {
    this.watchers.clear();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = null;
  }

  /** Forgets watch history, so a watch from an older resourceVersion gets 410 Gone. */
  compact(): void {
    this.history = [];
  }

  private key(resource: string, ns: string | undefined, name: string): string {
    return `${resource}/${ns ?? ''}/${name}`;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/version')
      return this.json(res, 200, { gitVersion: 'v0.0.0-stand-in', major: '0', minor: '0' });
    const nsMatch = NS_ROUTE.exec(url.pathname);
    const m = nsMatch ? [url.pathname, undefined, 'namespaces', nsMatch[1], undefined] : ROUTE.exec(url.pathname);
    if (!m) return this.fail(res, 404, 'NotFound', `the server could not find the requested resource ${url.pathname}`);
    const [, namespace, resource, name, statusSub] = m as [
      string,
      string | undefined,
      string,
      string | undefined,
      string | undefined,
    ];
    const body = await readBody(req);
    const method = req.method ?? 'GET';
    if (!name) {
      if (method === 'GET' && url.searchParams.get('watch') === 'true')
        return this.watch(res, resource, namespace, url.searchParams.get('resourceVersion'));
      if (method === 'GET')
        return this.json(res, 200, {
          apiVersion: KINDS[resource]!.apiVersion,
          kind: `${KINDS[resource]!.kind}List`,
          metadata: { resourceVersion: String(this.rv) },
          items: this.list(resource, namespace),
        });
      if (method === 'POST') return this.create(res, resource, namespace, body);
      return this.fail(res, 405, 'MethodNotAllowed', method);
    }
    const key = this.key(resource, namespace, name);
    const current = this.objects.get(key);
    if (!current) return this.fail(res, 404, 'NotFound', `${resource} "${name}" not found`);
    if (method === 'GET') return this.json(res, 200, current);
    if (method === 'DELETE') return this.remove(res, resource, key, current);
    if (method === 'PUT') return this.update(res, resource, key, current, body, Boolean(statusSub));
    if (method === 'PATCH') {
      if (!String(req.headers['content-type']).startsWith('application/merge-patch+json'))
        return this.fail(res, 415, 'UnsupportedMediaType', String(req.headers['content-type']));
      const precondition = body?.metadata?.resourceVersion;
      if (precondition !== undefined && precondition !== current.metadata.resourceVersion)
        return this.conflict(res, resource, name);
      return this.update(
        res,
        resource,
        key,
        current,
        mergePatch(structuredClone(current), body),
        Boolean(statusSub),
        true,
      );
    }
    return this.fail(res, 405, 'MethodNotAllowed', method);
  }

  private list(resource: string, namespace?: string): Obj[] {
    return [...this.objects.entries()]
      .filter(([k]) => k.startsWith(namespace ? `${resource}/${namespace}/` : `${resource}/`))
      .map(([, v]) => v);
  }

  private create(res: http.ServerResponse, resource: string, namespace: string | undefined, body: Obj): void {
    const meta = body.metadata ?? {};
    const name = meta.name ?? (meta.generateName ? `${meta.generateName}${randomUUID().slice(0, 5)}` : undefined);
    if (!name) return this.fail(res, 422, 'Invalid', 'metadata.name: Required value');
    if (resource === 'leases' && !validLeaseTimes(body))
      return this.fail(res, 400, 'BadRequest', 'parsing time as "2006-01-02T15:04:05.000000Z07:00"');
    const key = this.key(resource, namespace, name);
    if (this.objects.has(key)) return this.fail(res, 409, 'AlreadyExists', `${resource} "${name}" already exists`);
    const obj: Obj = {
      ...structuredClone(body),
      apiVersion: KINDS[resource]!.apiVersion,
      kind: KINDS[resource]!.kind,
      metadata: {
        ...meta,
        name,
        ...(namespace ? { namespace } : {}),
        uid: randomUUID(),
        creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        ...(KINDS[resource]!.status ? { generation: 1 } : {}),
      },
    };
    if (resource === 'secrets' && obj.stringData) {
      obj.data = {
        ...obj.data,
        ...Object.fromEntries(
          Object.entries(obj.stringData as Record<string, string>).map(([k, v]) => [
            k,
            Buffer.from(v).toString('base64'),
          ]),
        ),
      };
      delete obj.stringData;
    }
    if (KINDS[resource]!.status) delete obj.status;
    this.store(resource, key, obj, 'ADDED');
    this.json(res, 201, obj);
  }

  private update(
    res: http.ServerResponse,
    resource: string,
    key: string,
    current: Obj,
    body: Obj,
    statusOnly: boolean,
    patched = false,
  ): void {
    if (
      !patched &&
      body.metadata?.resourceVersion !== undefined &&
      body.metadata.resourceVersion !== current.metadata.resourceVersion
    )
      return this.conflict(res, resource, current.metadata.name);
    if (resource === 'leases' && !validLeaseTimes(body))
      return this.fail(res, 400, 'BadRequest', 'parsing time as "2006-01-02T15:04:05.000000Z07:00"');
    let next: Obj;
    if (KINDS[resource]!.status && statusOnly) next = { ...current, status: body.status };
    else if (KINDS[resource]!.status) {
      next = {
        ...body,
        status: current.status,
        metadata: {
          ...body.metadata,
          uid: current.metadata.uid,
          creationTimestamp: current.metadata.creationTimestamp,
          generation: current.metadata.generation,
          deletionTimestamp: current.metadata.deletionTimestamp,
        },
      };
      if (JSON.stringify(body.spec) !== JSON.stringify(current.spec))
        next.metadata.generation = (current.metadata.generation ?? 1) + 1;
    } else
      next = {
        ...body,
        metadata: {
          ...body.metadata,
          uid: current.metadata.uid,
          creationTimestamp: current.metadata.creationTimestamp,
        },
      };
    if (resource === 'secrets' && next.stringData) {
      next.data = {
        ...next.data,
        ...Object.fromEntries(
          Object.entries(next.stringData as Record<string, string>).map(([k, v]) => [
            k,
            Buffer.from(v).toString('base64'),
          ]),
        ),
      };
      delete next.stringData;
    }
    if (next.metadata.deletionTimestamp && !(next.metadata.finalizers ?? []).length) {
      this.objects.delete(key);
      this.emit('DELETED', resource, this.bump(next));
      return this.json(res, 200, next);
    }
    this.store(resource, key, next, 'MODIFIED');
    this.json(res, 200, next);
  }

  private remove(res: http.ServerResponse, resource: string, key: string, current: Obj): void {
    if ((current.metadata.finalizers ?? []).length) {
      if (!current.metadata.deletionTimestamp)
        this.store(
          resource,
          key,
          {
            ...current,
            metadata: { ...current.metadata, deletionTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') },
          },
          'MODIFIED',
        );
      return this.json(res, 200, this.objects.get(key));
    }
    this.objects.delete(key);
    this.emit('DELETED', resource, this.bump(current));
    this.json(res, 200, { kind: 'Status', apiVersion: 'v1', status: 'Success' });
  }

  private store(resource: string, key: string, obj: Obj, type: string): void {
    this.objects.set(key, this.bump(obj));
    this.emit(type, resource, obj);
  }

  private bump(obj: Obj): Obj {
    obj.metadata.resourceVersion = String(++this.rv);
    return obj;
  }

  private emit(type: string, resource: string, object: Obj): void {
    this.history.push({ rv: this.rv, type, resource, object });
    for (const w of this.watchers) {
      if (w.resource === resource && (!w.namespace || w.namespace === object.metadata.namespace))
        w.res.write(JSON.stringify({ type, object }) + '\n');
    }
  }

  private watch(res: http.ServerResponse, resource: string, namespace: string | undefined, from: string | null): void {
    const since = Number(from ?? this.rv);
    res.writeHead(200, { 'content-type': 'application/json' });
    const oldest = this.history[0]?.rv ?? this.rv + 1;
    if (since < oldest - 1 && since < this.rv) {
      // What the real server does for a compacted resourceVersion: an ERROR event, then the end.
      res.end(
        JSON.stringify({
          type: 'ERROR',
          object: {
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            reason: 'Expired',
            code: 410,
            message: `too old resource version: ${since}`,
          },
        }) + '\n',
      );
      return;
    }
    for (const h of this.history) {
      if (h.rv > since && h.resource === resource && (!namespace || namespace === h.object.metadata.namespace))
        res.write(JSON.stringify({ type: h.type, object: h.object }) + '\n');
    }
    const watcher: Watcher = { resource, namespace, res };
    this.watchers.add(watcher);
    res.on('close', () => this.watchers.delete(watcher));
  }

  private conflict(res: http.ServerResponse, resource: string, name: string): void {
    this.fail(
      res,
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    );
  }

  private fail(res: http.ServerResponse, code: number, reason: string, message: string): void {
    this.json(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
  }

  private json(res: http.ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }
}

function validLeaseTimes(body: Obj): boolean {
  return ['renewTime', 'acquireTime'].every(
    (k) => body.spec?.[k] === undefined || body.spec[k] === null || MICRO_TIME.test(body.spec[k]),
  );
}

/** RFC 7386. */
function mergePatch(target: any, patch: any): any {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out = target !== null && typeof target === 'object' && !Array.isArray(target) ? target : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

async function readBody(req: http.IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}
