import { z } from 'zod';
import { addressSchema, isDomainName, normalizeDomain, splitAddress } from '../../base/address.js';
import { mailboxPolicyInputSchema } from '../../access/policy.schemas.js';
import { mailboxTtlSecondsSchema } from '../../state/mailboxes/mailbox.schemas.js';

/** docs/contract.md, Names: API group `mailbox-service.dev`, version `v1alpha1`, kinds Domain and Mailbox. */
export const API_VERSION = 'mailbox-service.dev/v1alpha1';
/** A manifest without `metadata.namespace` lives here (docs/contract.md: namespace `default`). */
export const DEFAULT_NAMESPACE = 'default';

// Kubernetes object-name rules (RFC 1123). They also make names safe as file names: no `/`,
// no leading `.`, so a secret or status path can never leave its directory.
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const isObjectName = (v: string): boolean => v.length <= 253 && DNS_SUBDOMAIN.test(v);
export const isNamespaceName = (v: string): boolean => v.length <= 63 && DNS_LABEL.test(v);

const objectName = z
  .string()
  .refine(isObjectName, 'must be a lower-case RFC 1123 name (a-z, 0-9, "-", "."), at most 253 characters');
const namespaceName = z
  .string()
  .refine(isNamespaceName, 'must be a lower-case RFC 1123 label (a-z, 0-9, "-"), at most 63 characters');
// Kubernetes Secret data keys.
const secretKey = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[-._a-zA-Z0-9]+$/, 'must consist of a-z, A-Z, 0-9, "-", "_" or "."');
const rateLimit = z.number().int().min(1).max(1_000_000);
/** Bytes; when given, the manifest owns the quota (docs/api.md, "Storage quota"). */
const storageBytes = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** Unknown metadata (labels, annotations, resourceVersion…) is allowed and dropped. */
const metadataSchema = z
  .object({
    name: objectName,
    namespace: namespaceName.default(DEFAULT_NAMESPACE),
    generation: z.number().int().nonnegative().optional(),
    uid: z.string().max(100).optional(),
  })
  .refine((m) => m.namespace.length + 1 + m.name.length <= 300, {
    message: 'namespace/name must be at most 300 characters',
    path: ['name'],
  });

// `spec` is strict: a misspelt field is an error naming it rather than a silently ignored line.
const domainSpecSchema = z
  .object({
    domain: z.string().transform(normalizeDomain).refine(isDomainName, 'must be a domain name such as example.test'),
    tokenSecretName: objectName.optional(),
    sendRateLimitPerMinute: rateLimit.optional(),
    /** Storage quota of its mailboxes that declare none. */
    defaultStorageQuotaBytes: storageBytes.optional(),
  })
  .strict();

const mailboxSpecSchema = z
  .object({
    address: addressSchema,
    displayName: z.string().trim().max(200).optional(),
    aliases: z.array(addressSchema).max(100).optional(),
    passwordSecretRef: z.object({ name: objectName, key: secretKey }).strict().optional(),
    tokenSecretName: objectName.optional(),
    sendRateLimitPerMinute: rateLimit.optional(),
    /** Outbound policy (docs/api.md, "Outbound policy"); when given, the manifest owns it. */
    policy: mailboxPolicyInputSchema.optional(),
    /** Storage quota of this mailbox (overrides the Domain's default). */
    storageQuotaBytes: storageBytes.optional(),
    /** An ephemeral mailbox: it ends this many seconds after the mailbox was created (docs/workflow.md). */
    ttlSeconds: mailboxTtlSecondsSchema.optional(),
  })
  .strict()
  .superRefine((spec, ctx) => {
    const domain = splitAddress(spec.address).domain;
    const seen = new Set<string>();
    (spec.aliases ?? []).forEach((alias, i) => {
      // Decision: aliases stay in the mailbox's domain, so a domain token's authority (spec, SMTP
      // rule 3) and the domain's inbound MX cover them.
      if (splitAddress(alias).domain !== domain)
        ctx.addIssue({ code: 'custom', path: ['aliases', i], message: `must be in the mailbox's domain ${domain}` });
      if (alias === spec.address)
        ctx.addIssue({ code: 'custom', path: ['aliases', i], message: 'must differ from address' });
      if (seen.has(alias)) ctx.addIssue({ code: 'custom', path: ['aliases', i], message: `${alias} is listed twice` });
      seen.add(alias);
    });
  });

// Top level is not strict: objects read from Kubernetes carry `status` and other fields.
export const domainResourceSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('Domain'),
  metadata: metadataSchema,
  spec: domainSpecSchema,
});

export const mailboxResourceSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('Mailbox'),
  metadata: metadataSchema,
  spec: mailboxSpecSchema,
});

/**
 * A core/v1 Secret, accepted only from a manifest directory or file: it lets the same file hold
 * a Mailbox and its password Secret for `kubectl apply` and for the file source alike.
 */
export const secretManifestSchema = z.object({
  apiVersion: z.literal('v1'),
  kind: z.literal('Secret'),
  metadata: metadataSchema,
  type: z.string().optional(),
  stringData: z.record(secretKey, z.string()).optional(),
  data: z.record(secretKey, z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64')).optional(),
});

export type DomainResource = z.infer<typeof domainResourceSchema>;
export type MailboxResource = z.infer<typeof mailboxResourceSchema>;
export type SecretManifest = z.infer<typeof secretManifestSchema>;
export type DeclaredResource = DomainResource | MailboxResource;
export type Manifest = DeclaredResource | SecretManifest;
export type ResourceKind = Manifest['kind'];

/** Identifies one declared object; `uid` is set by Kubernetes (owner references). */
export interface ResourceRef {
  readonly kind: ResourceKind;
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string | undefined;
}

export const refOf = (m: Manifest): ResourceRef => ({
  kind: m.kind,
  namespace: m.metadata.namespace,
  name: m.metadata.name,
  uid: m.metadata.uid,
});
/** `domain.resource_key` / `mailbox.resource_key`: `<namespace>/<name>`. */
export const resourceKeyOf = (ref: Pick<ResourceRef, 'namespace' | 'name'>): string => `${ref.namespace}/${ref.name}`;
/** Unique across kinds; used for queues, logs and status. */
export const refId = (ref: ResourceRef): string => `${ref.kind}/${ref.namespace}/${ref.name}`;

/** docs/contract.md defaults: `<name>-domain-token` and `<name>-mailbox-token`. */
export function tokenSecretNameOf(r: DeclaredResource): string {
  return r.spec.tokenSecretName ?? `${r.metadata.name}-${r.kind === 'Domain' ? 'domain' : 'mailbox'}-token`;
}

/** The decoded key/value pairs of a Secret manifest; `stringData` wins, as in Kubernetes. */
export function secretDataOf(s: SecretManifest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  return { ...out, ...(s.stringData ?? {}) };
}

const schemaByKind = {
  Domain: domainResourceSchema,
  Mailbox: mailboxResourceSchema,
  Secret: secretManifestSchema,
} as const;

/** Validates one decoded document. Returns the manifest or the issues, each naming its field. */
export function validateManifest(doc: unknown): { ok: true; manifest: Manifest } | { ok: false; issues: string[] } {
  const obj = (doc ?? {}) as { apiVersion?: unknown; kind?: unknown };
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    return { ok: false, issues: ['a manifest must be a YAML mapping'] };
  if (typeof obj.kind !== 'string' || !Object.hasOwn(schemaByKind, obj.kind)) {
    return {
      ok: false,
      issues: [
        `kind: ${JSON.stringify(obj.kind ?? null)} is not supported (Domain and Mailbox of ${API_VERSION}, or v1 Secret)`,
      ],
    };
  }
  const parsed = schemaByKind[obj.kind as ResourceKind].safeParse(doc);
  if (parsed.success) return { ok: true, manifest: parsed.data };
  return { ok: false, issues: parsed.error.issues.map((i) => `${formatPath(i.path)}: ${i.message}`) };
}

function formatPath(path: readonly PropertyKey[]): string {
  return (
    path.reduce<string>(
      (acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)),
      '',
    ) || '(document)'
  );
}
